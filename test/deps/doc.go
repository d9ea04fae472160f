// Package deps checks the dependency rules of the module: cgo only in lib/asr
// and lib/audio, the daemon side pure Go, the budget only in yaz-gate.
package deps
