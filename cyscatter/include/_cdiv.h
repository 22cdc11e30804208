/* Complex division as NumPy's ufunc computes it (Smith's method), so that cyscatter's div matches
 * np.divide.at to the last bit; C99's default complex division rounds differently. And complex products. */
#ifndef CYSCATTER_CDIV_H
#define CYSCATTER_CDIV_H
#include <math.h>
#include <complex.h>

#define CYSCATTER_DEFINE_CDIV(NAME, CT, RT, FABS)                                   \
static inline CT NAME(CT a, CT b) {                                                 \
    RT ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b), rat, scl;        \
    RT abs_br = FABS(br), abs_bi = FABS(bi);                                        \
    RT out[2];                                                                      \
    if (abs_br >= abs_bi) {                                                         \
        if (abs_br == 0 && abs_bi == 0) {                                           \
            out[0] = ar / abs_br;                                                   \
            out[1] = ai / abs_br;                                                   \
        } else {                                                                    \
            rat = bi / br;                                                          \
            scl = (RT)1.0 / (br + bi * rat);                                        \
            out[0] = (ar + ai * rat) * scl;                                         \
            out[1] = (ai - ar * rat) * scl;                                         \
        }                                                                           \
    } else {                                                                        \
        rat = br / bi;                                                              \
        scl = (RT)1.0 / (bi + br * rat);                                            \
        out[0] = (ar * rat + ai) * scl;                                             \
        out[1] = (ai * rat - ar) * scl;                                             \
    }                                                                               \
    CT res;                                                                         \
    ((RT *)&res)[0] = out[0];                                                       \
    ((RT *)&res)[1] = out[1];                                                       \
    return res;                                                                     \
}

CYSCATTER_DEFINE_CDIV(cyscatter_cdiv, double _Complex, double, fabs)
CYSCATTER_DEFINE_CDIV(cyscatter_cdivf, float _Complex, float, fabsf)

/* Complex product by the plain formula, as NumPy computes it. GCC gives this for `a * b` under
 * -fcx-limited-range; compilers without that flag (clang 14) call C99 Annex G's __muldc3, whose recovery of
 * infinities differs from np.multiply.at. Spelled out, the result is the same with every compiler. */
#define CYSCATTER_DEFINE_CMUL(NAME, CT, RT)                                         \
static inline CT NAME(CT a, CT b) {                                                 \
    RT ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b);                  \
    CT res;                                                                         \
    ((RT *)&res)[0] = ar * br - ai * bi;                                            \
    ((RT *)&res)[1] = ar * bi + ai * br;                                            \
    return res;                                                                     \
}

CYSCATTER_DEFINE_CMUL(cyscatter_cmul, double _Complex, double)
CYSCATTER_DEFINE_CMUL(cyscatter_cmulf, float _Complex, float)

#endif
