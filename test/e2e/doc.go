// Package e2e tests the real YazSes binaries together: built once, chained in
// shell pipelines, with real whisper.cpp inference on generated models, real
// espeak-ng, and a private PulseAudio server with a null sink.
//
// The harness is shared with the other test packages: internal/testbin
// (the binaries), internal/testdaemon (a yazsesd under test),
// internal/testmcp (a raw MCP client), internal/testx (Xvfb and a recording
// xterm) and internal/testwait (the events tests wait on instead of
// sleeping).
package e2e
