// Declarations shared by yaz.c and cgo.go (package asr).
#ifndef YAZ_ASR_H
#define YAZ_ASR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <whisper.h>
#include <parakeet.h>

// yaz_job is the C side of one whisper_full call. Go sets abort (atomically)
// once the call's context is done; whisper.cpp reads it at every check
// without calling into Go.
typedef struct {
	int32_t abort;      // non-zero: stop at the next check
	uintptr_t progress; // cgo.Handle of the Go progress function; 0: none
	int32_t aborted;    // whisper.cpp saw the flag: its output is partial
	int64_t checks;     // how often the flag was read (tests)
	int64_t graphs;     // graph computations run (tests)
	int64_t nodes;      // graph nodes asked about on a GPU backend (the check every YAZ_DEVICE_NODES)
	int64_t device_checks;   // checks of the flag inside graphs on a GPU backend (tests)
	int64_t abort_after;     // tests: > 0 sets abort at this many device checks
	int64_t device_nodes;    // tests: nodes between two device checks (0: YAZ_DEVICE_NODES)
	int64_t graphs_at_abort; // tests: graphs begun when the flag was first seen
} yaz_job;

// yaz_opts are the settings of one call.
typedef struct {
	int threads;
	int beam_size;        // > 1: beam search
	int audio_ctx;        // 0: full
	int no_fallback;      // no temperature fallback
	int token_times;      // time every token (whisper's token_timestamps)
	int warm_up;          // one segment of at most one token, no fallback (Model.WarmUp)
	const char *language; // a code, or "auto"
	const char *prompt;   // NULL: none
} yaz_opts;

void yaz_log_install(void);
void yaz_log_enable(int on);
struct whisper_state *yaz_init_state(struct whisper_context *ctx);
int yaz_full(struct whisper_context *ctx, struct whisper_state *st, const yaz_opts *o, yaz_job *job,
	const float *samples, int n);

struct parakeet_context *yaz_parakeet_init(const char *path, bool use_gpu, int gpu_device);
struct parakeet_state *yaz_parakeet_init_state(struct parakeet_context *ctx);
int yaz_parakeet_full(struct parakeet_context *ctx, struct parakeet_state *st, int threads, yaz_job *job,
	const float *samples, int n);
int yaz_parakeet_piece(struct parakeet_context *ctx, parakeet_token id, char *out, int max);

#endif
