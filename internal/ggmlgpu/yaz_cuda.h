// Declarations of yaz_cuda.c (see cuda.go).
#ifndef YAZ_CUDA_H
#define YAZ_CUDA_H

// yaz_cuda_load opens the CUDA module and registers its backend with ggml,
// once per process; it returns why CUDA is not there ("" when it is, or
// when no module is installed).
const char *yaz_cuda_load(void);
// yaz_cuda_disable keeps the module out of the process if yaz_cuda_load
// has not run yet.
void yaz_cuda_disable(void);

#endif
