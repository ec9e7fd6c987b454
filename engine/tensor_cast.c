/* tensor_cast.c — placeholder: converting tensors between dtypes lands with the Cast family. */
#include "internal.h"

tide_tensor *tide_tensor_cast(const tide_tensor *t, tide_dtype dt, tide_error *err)
{
    (void)t;
    tide_error_set(err, TIDE_UNIMPLEMENTED, "cast to %s is not implemented yet", tide_dtype_name(dt));
    return NULL;
}
