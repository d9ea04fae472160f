// Package e2e tests the real YazSes binaries together: built once, chained in
// shell pipelines, with real whisper.cpp inference on generated models, real
// espeak-ng, and a private PulseAudio server with a null sink.
package e2e
