// The C side of package asr: whisper_full and parakeet_full on a state of
// their own, the abort flag and progress, whisper.cpp's log lines, and the
// graph hook that makes an abort land within one graph node. See cgo.go and
// parakeet.go.

#include "yaz.h"
#include <ggml-backend.h>
#include <malloc.h>

// ---- memory ----------------------------------------------------------------

// One malloc arena for the process (unless MALLOC_ARENA_MAX says
// otherwise). Each call makes and frees a whisper state of tens of MiB on
// whichever OS thread the Go scheduler runs it; glibc gives threads arenas
// of their own and keeps what is freed in each, so a long file decoded in
// pieces grew by about a state per arena (mini model: 59 MiB for 1 minute,
// 151 MiB for 8) where one arena reuses the same memory (69 MiB for both).
// The compute threads do not allocate on the hot path: one arena costs
// no speed here.
__attribute__((constructor)) static void yaz_one_arena(void) {
#ifdef M_ARENA_MAX
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		mallopt(M_ARENA_MAX, 1);
	}
#endif
}

// ---- logging ---------------------------------------------------------------

// whisper.cpp's and ggml's log lines go to Go (yazLog), which writes them as
// slog records at debug level. yaz_log_on is off unless that level is on, so
// a quiet run makes no call into Go at all.
extern void yazLog(int level, char *text);
static int yaz_log_on;
static __thread int yaz_log_muted;

static void yaz_log(enum ggml_log_level level, const char *text, void *user_data) {
	(void)user_data;
	if (yaz_log_muted || !__atomic_load_n(&yaz_log_on, __ATOMIC_RELAXED)) {
		return;
	}
	yazLog((int)level, (char *)text);
}

// Both engines' loggers (each sets ggml's as well) go the same way.
void yaz_log_install(void) {
	whisper_log_set(yaz_log, NULL);
	parakeet_log_set(yaz_log, NULL);
}
void yaz_log_enable(int on) { __atomic_store_n(&yaz_log_on, on, __ATOMIC_RELAXED); }

// ---- one transcription -----------------------------------------------------

static bool yaz_should_abort(void *data) {
	yaz_job *j = data;
	__atomic_fetch_add(&j->checks, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&j->abort, __ATOMIC_RELAXED) != 0) {
		if (!__atomic_exchange_n(&j->aborted, 1, __ATOMIC_RELAXED)) {
			__atomic_store_n(&j->graphs_at_abort, __atomic_load_n(&j->graphs, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
		}
		return true;
	}
	return false;
}

static bool yaz_encoder_begin(struct whisper_context *ctx, struct whisper_state *st, void *data) {
	(void)ctx; (void)st;
	return !yaz_should_abort(data);
}

extern void yazProgress(uintptr_t handle, int percent);

static void yaz_progress(struct whisper_context *ctx, struct whisper_state *st, int percent, void *data) {
	(void)ctx; (void)st;
	yaz_job *j = data;
	if (j->progress) {
		yazProgress(j->progress, percent);
	}
}

// The job of the whisper_full call running on this thread, for the graph
// hook below.
static __thread yaz_job *yaz_current;

// whisper.cpp 1.9.1 checks whisper_full_params.abort_callback (and
// parakeet_full_params.abort_callback) only after a
// whole encoder pass (0.7 s for tiny.en, 1.5 s for base.en at the full
// context here; many seconds for larger models) and after each decoder step.
// The CPU backend can check it after every node of a graph, but whisper.cpp
// never hands the callback to the backends of its schedulers. The link flag
// --wrap=ggml_backend_sched_graph_compute routes whisper.cpp's (and
// parakeet.cpp's) calls through
// this function, which hands the running job's flag to every backend of the
// scheduler first: an abort then lands within one graph node. With a shared
// libwhisper the wrap does not apply and the per-pass checks remain.
//
// A GPU backend (Vulkan, CUDA) takes no abort callback: it runs the graph
// it is given. On a scheduler with one, the hook also sets the scheduler's
// eval callback, which makes ggml compute each GPU part of the graph in
// runs of YAZ_DEVICE_NODES nodes and ask after each run whether to go on
// (the CPU parts still run whole, checked node by node by the CPU
// backend): an abort lands within that many nodes on the device, at the
// cost of a wait for the device every run. Once the flag is set, each
// remaining GPU part computes one node and stops, and no new graph starts.
enum ggml_status __real_ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph *graph);

#define YAZ_DEVICE_NODES 64

static bool yaz_device_eval(struct ggml_tensor *t, bool ask, void *data) {
	yaz_job *j = data;
	if (ask) {
		if (t->buffer == NULL || ggml_backend_buffer_is_host(t->buffer)) {
			return false; // a CPU part: computed whole, the CPU backend checks
		}
		if (__atomic_load_n(&j->abort, __ATOMIC_RELAXED) != 0) {
			return true;
		}
		int64_t every = j->device_nodes > 0 ? j->device_nodes : YAZ_DEVICE_NODES;
		return __atomic_add_fetch(&j->nodes, 1, __ATOMIC_RELAXED) % every == 0;
	}
	int64_t n = __atomic_add_fetch(&j->device_checks, 1, __ATOMIC_RELAXED);
	if (j->abort_after > 0 && n >= j->abort_after) {
		__atomic_store_n(&j->abort, 1, __ATOMIC_RELAXED);
	}
	return !yaz_should_abort(j);
}

enum ggml_status __wrap_ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
	yaz_job *j = yaz_current;
	if (j) {
		if (__atomic_load_n(&j->abort, __ATOMIC_RELAXED) != 0 && yaz_should_abort(j)) {
			return GGML_STATUS_ABORTED; // no new graph once the flag is set
		}
		__atomic_fetch_add(&j->graphs, 1, __ATOMIC_RELAXED);
	}
	bool device = false;
	for (int i = 0; i < ggml_backend_sched_get_n_backends(sched); i++) {
		ggml_backend_t b = ggml_backend_sched_get_backend(sched, i);
		ggml_backend_dev_t dev = ggml_backend_get_device(b);
		if (dev && ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_CPU && ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_ACCEL) {
			device = true;
		}
		ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : NULL;
		if (!reg) {
			continue;
		}
		ggml_backend_set_abort_callback_t set =
			(ggml_backend_set_abort_callback_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_abort_callback");
		if (set) {
			set(b, j ? yaz_should_abort : NULL, j);
		}
	}
	if (device) {
		ggml_backend_sched_set_eval_callback(sched, j ? yaz_device_eval : NULL, j);
	}
	return __real_ggml_backend_sched_graph_compute(sched, graph);
}

// yaz_init_state makes a fresh state. Its log lines (buffer sizes) are the
// same every time: only the first state of the process logs them.
static int yaz_states;

struct whisper_state *yaz_init_state(struct whisper_context *ctx) {
	yaz_log_muted = __atomic_fetch_add(&yaz_states, 1, __ATOMIC_RELAXED) > 0;
	struct whisper_state *st = whisper_init_state(ctx);
	yaz_log_muted = 0;
	return st;
}

int yaz_full(struct whisper_context *ctx, struct whisper_state *st, const yaz_opts *o, yaz_job *job,
		const float *samples, int n) {
	struct whisper_full_params p = whisper_full_default_params(
		o->beam_size > 1 ? WHISPER_SAMPLING_BEAM_SEARCH : WHISPER_SAMPLING_GREEDY);
	p.n_threads = o->threads;
	p.print_progress = false;
	p.print_realtime = false;
	p.print_timestamps = false;
	p.print_special = false;
	p.translate = false;
	if (o->beam_size > 1) {
		p.beam_search.beam_size = o->beam_size;
	}
	if (o->no_fallback) {
		p.temperature_inc = 0;
	}
	p.audio_ctx = o->audio_ctx;
	if (o->warm_up) {
		// Every graph runs once (mel, encoder, cross, a decoder step) and
		// the decoder stops at its first token.
		p.single_segment = true;
		p.max_tokens = 1;
		p.temperature_inc = 0;
	}
	// Token times change no text: whisper.cpp computes them after each
	// segment is decoded.
	p.token_timestamps = o->token_times != 0;
	p.language = o->language;
	p.initial_prompt = o->prompt;
	// Non-speech tokens ([Music], (laughs) ...) are suppressed, as
	// whisper-cli -sns does.
	p.suppress_nst = true;
	p.progress_callback = yaz_progress;
	p.progress_callback_user_data = job;
	p.encoder_begin_callback = yaz_encoder_begin;
	p.encoder_begin_callback_user_data = job;
	p.abort_callback = yaz_should_abort;
	p.abort_callback_user_data = job;
	yaz_current = job;
	int rc = whisper_full_with_state(ctx, st, p, samples, n);
	yaz_current = NULL;
	return rc;
}

// ---- Parakeet TDT ----------------------------------------------------------

// yaz_parakeet_init loads a Parakeet model without a state: each call makes
// one. The default context parameters are parakeet-cli's.
struct parakeet_context *yaz_parakeet_init(const char *path, bool use_gpu, int gpu_device) {
	struct parakeet_context_params p = parakeet_context_default_params();
	p.use_gpu = use_gpu;
	p.gpu_device = gpu_device;
	return parakeet_init_from_file_with_params_no_state(path, p);
}

// Only the first Parakeet state of the process logs its buffer sizes, as
// for whisper states.
static int yaz_parakeet_states;

struct parakeet_state *yaz_parakeet_init_state(struct parakeet_context *ctx) {
	yaz_log_muted = __atomic_fetch_add(&yaz_parakeet_states, 1, __ATOMIC_RELAXED) > 0;
	struct parakeet_state *st = parakeet_init_state(ctx);
	yaz_log_muted = 0;
	return st;
}

static bool yaz_parakeet_encoder_begin(struct parakeet_context *ctx, struct parakeet_state *st, void *data) {
	(void)ctx; (void)st;
	return !yaz_should_abort(data);
}

// yaz_parakeet_full is parakeet-cli's call (greedy, the default parameters:
// no context carried over) with the thread count, the abort flag checked
// before the encoder, after each graph and, through the graph hook, after
// every node.
int yaz_parakeet_full(struct parakeet_context *ctx, struct parakeet_state *st, int threads, yaz_job *job,
		const float *samples, int n) {
	struct parakeet_full_params p = parakeet_full_default_params(PARAKEET_SAMPLING_GREEDY);
	p.n_threads = threads;
	p.encoder_begin_callback = yaz_parakeet_encoder_begin;
	p.encoder_begin_callback_user_data = job;
	p.abort_callback = yaz_should_abort;
	p.abort_callback_user_data = job;
	yaz_current = job;
	int rc = parakeet_full_with_state(ctx, st, p, samples, n);
	yaz_current = NULL;
	return rc;
}

// yaz_parakeet_piece writes the text of token id as parakeet-cli prints it
// after the first token: SentencePiece's word mark as a space, control
// pieces as nothing. It returns the text's length (more than max - 1: cut).
int yaz_parakeet_piece(struct parakeet_context *ctx, parakeet_token id, char *out, int max) {
	return parakeet_token_to_text(parakeet_token_to_str(ctx, id), false, out, max);
}
