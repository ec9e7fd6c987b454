/* dtype.c — element types: names, sizes, classes, and float16/bfloat16 conversions. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "half_convert.h"
#include "internal.h"

static const struct {
    const char *name;
    size_t size;
} dtype_info[TIDE_NUM_DTYPES] = {
    [TIDE_INVALID_DTYPE] = {NULL, 0},
    [TIDE_BOOL] = {"bool", 1},
    [TIDE_INT8] = {"int8", 1},
    [TIDE_INT16] = {"int16", 2},
    [TIDE_INT32] = {"int32", 4},
    [TIDE_INT64] = {"int64", 8},
    [TIDE_UINT8] = {"uint8", 1},
    [TIDE_UINT16] = {"uint16", 2},
    [TIDE_FLOAT16] = {"float16", 2},
    [TIDE_BFLOAT16] = {"bfloat16", 2},
    [TIDE_FLOAT32] = {"float32", 4},
    [TIDE_FLOAT64] = {"float64", 8},
    [TIDE_COMPLEX64] = {"complex64", 8},
    [TIDE_COMPLEX128] = {"complex128", 16},
    [TIDE_STRING] = {"string", sizeof(tide_tstring)},
};

const char *tide_dtype_name(tide_dtype dt)
{
    return (unsigned)dt < TIDE_NUM_DTYPES ? dtype_info[dt].name : NULL;
}

tide_dtype tide_dtype_from_name(const char *name)
{
    if (!name)
        return TIDE_INVALID_DTYPE;
    for (int i = 1; i < TIDE_NUM_DTYPES; i++)
        if (strcasecmp(name, dtype_info[i].name) == 0)
            return (tide_dtype)i;
    static const struct {
        const char *alias;
        tide_dtype dt;
    } aliases[] = {{"float", TIDE_FLOAT32},  {"double", TIDE_FLOAT64}, {"half", TIDE_FLOAT16},
                   {"bf16", TIDE_BFLOAT16},  {"int", TIDE_INT32},      {"long", TIDE_INT64},
                   {"f32", TIDE_FLOAT32},    {"f64", TIDE_FLOAT64},    {"f16", TIDE_FLOAT16},
                   {"i32", TIDE_INT32},      {"i64", TIDE_INT64},      {"str", TIDE_STRING}};
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcasecmp(name, aliases[i].alias) == 0)
            return aliases[i].dt;
    return TIDE_INVALID_DTYPE;
}

size_t tide_dtype_size(tide_dtype dt)
{
    return (unsigned)dt < TIDE_NUM_DTYPES ? dtype_info[dt].size : 0;
}

bool tide_dtype_is_float(tide_dtype dt)
{
    return dt == TIDE_FLOAT16 || dt == TIDE_BFLOAT16 || dt == TIDE_FLOAT32 || dt == TIDE_FLOAT64;
}

bool tide_dtype_is_integer(tide_dtype dt)
{
    return dt == TIDE_INT8 || dt == TIDE_INT16 || dt == TIDE_INT32 || dt == TIDE_INT64 ||
           dt == TIDE_UINT8 || dt == TIDE_UINT16;
}

bool tide_dtype_is_complex(tide_dtype dt)
{
    return dt == TIDE_COMPLEX64 || dt == TIDE_COMPLEX128;
}

/* The conversions themselves are half_convert.h's, shared with the GPU kernels. */
uint16_t tide_f32_to_f16(float f)
{
    return tide_half_from_f32(f);
}

float tide_f16_to_f32(uint16_t h)
{
    return tide_half_to_f32(h);
}

uint16_t tide_f32_to_bf16(float f)
{
    return tide_bhalf_from_f32(f);
}

float tide_bf16_to_f32(uint16_t b)
{
    return tide_bhalf_to_f32(b);
}
