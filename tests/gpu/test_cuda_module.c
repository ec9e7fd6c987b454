/* test_cuda_module.c — the CUDA kernel module (libtide_cuda_kernels.so) built and linked: it is
 * opened with dlopen and RTLD_NOW (every symbol of cudart, cuBLAS and cuDNN it uses must resolve), its
 * entry point is asked for its table without an engine API (no CUDA call is made, so no GPU is
 * needed), and the table must be the engine's kernel list, entry for entry, with a compute function
 * each. Suite 'cuda'; runs where nvcc is found. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "../../kernels/cuda/cuda_kernels.h"
#include "../../kernels/cuda/module_abi.h"
#include "harness.h"

static const char *module_path;

static void test_module_table(void)
{
    void *lib = dlopen(module_path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        fprintf(stderr, "dlopen %s: %s\n", module_path, dlerror());
    CU_ASSERT_PTR_NOT_NULL_FATAL(lib);
    tide_cuda_module_open_fn open_fn;
    *(void **)&open_fn = dlsym(lib, TIDE_CUDA_MODULE_ENTRY);
    CU_ASSERT_PTR_NOT_NULL_FATAL(open_fn);
    const tide_cuda_module *m = open_fn(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(m->version, TIDE_CUDA_ABI_VERSION);
    CU_ASSERT(m->built_for && strstr(m->built_for, "sm_90"));
    const char *ops[128];
    int n = tide__cuda_kernel_ops(ops, 128);
    CU_ASSERT_EQUAL_FATAL(m->num_kernels, n);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_STRING_EQUAL(m->kernels[i].op, ops[i]);
        CU_ASSERT_PTR_NOT_NULL(m->kernels[i].compute);
    }
    printf("module %s: %d kernels, built for %s\n", module_path, m->num_kernels, m->built_for);
    /* only the entry point is exported: the forwarding functions stay inside the module */
    CU_ASSERT_PTR_NULL(dlsym(lib, "tide_kernel_input"));
    /* not closed, as the engine never closes it: cuBLAS and cuDNN carry their own C++ runtime, whose
     * exception pools (72704 bytes each) LeakSanitizer would report once their library is unmapped */
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_cuda_module path/to/libtide_cuda_kernels.so\n");
        return 2;
    }
    module_path = argv[1];
    static const th_test tests[] = {TH_TEST(test_module_table), TH_END};
    return th_main("cuda_module", tests);
}
