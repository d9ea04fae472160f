// Package scripts tests the shell scripts of scripts/ that the Makefile
// runs (setup-whisper.sh's lock and progress, load.sh, install-deps.sh),
// with stand-ins for the tools they drive, so that a test never touches
// the user's caches or the machine's packages.
package scripts
