// Package deps checks the dependency rules of the module: cgo only in
// cmd/yaz-decode/internal/asr, cmd/yaz-decode/internal/silero and lib/audio; yazsesd, yaz-gate and yaz-mcp never
// link C (they build without cgo, and nothing they link has a cgo file);
// the budget only in yaz-gate; every lib package linked by two binaries or
// saying in its package comment why it is in lib with one.
package deps
