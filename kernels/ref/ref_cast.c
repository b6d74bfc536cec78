/* ref_cast.c: fp32 <-> bf16 and fp32 <-> fp16 on the bit patterns, the
 * definition the backends' cast ops (and their mixed precision) are tested
 * against. Rounding is to nearest, ties to even, the IEEE default that
 * CUDA's __float2bfloat16_rn and __float2half_rn implement. */
#include <math.h>
#include <string.h>

#include "kernels/ref/ref.h"
#include "util.h"

static uint32_t bits(float v)
{
	uint32_t u;
	memcpy(&u, &v, sizeof(u));
	return u;
}

static float from_bits(uint32_t u)
{
	float v;
	memcpy(&v, &u, sizeof(v));
	return v;
}

/* bf16 is fp32's top half: round away the low 16 bits. */
uint16_t ref_f32_to_bf16(float v)
{
	uint32_t u = bits(v);
	if ((u & 0x7fffffffu) > 0x7f800000u)       /* NaN: quiet, sign and top payload kept */
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);           /* half an ulp, ties to even; carries into inf */
	return (uint16_t)(u >> 16);
}

float ref_bf16_to_f32(uint16_t h)
{
	return from_bits((uint32_t)h << 16);
}

/* fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
uint16_t ref_f32_to_f16(float v)
{
	uint32_t u = bits(v), a = u & 0x7fffffffu;
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	if (a > 0x7f800000u)                       /* NaN */
		return sign | 0x7e00u | (uint16_t)((a >> 13) & 0x3ffu);
	if (a >= 0x477ff000u)                      /* 65520 and up (inf too): inf */
		return sign | 0x7c00u;
	if (a >= 0x38800000u) {                    /* 2^-14 and up: a normal fp16 */
		a += 0xfffu + ((a >> 13) & 1u);    /* round at bit 13, ties to even */
		return sign | (uint16_t)((a - 0x38000000u) >> 13);  /* exponent 127 -> 15 */
	}
	if (a <= 0x33000000u)                      /* 2^-25 and below: zero (2^-25 ties to 0) */
		return sign;
	/* a subnormal fp16: the value in units of 2^-24, rounded */
	uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
	unsigned shift = 126 - e;                  /* 14 (2^-15) .. 24 (just above 2^-25) */
	uint32_t r = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
	if (rest > half || (rest == half && (r & 1u)))
		r++;                                   /* may carry into the smallest normal: right */
	return sign | (uint16_t)r;
}

float ref_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	if (e == 0x1f)                             /* inf, NaN */
		return from_bits(sign | 0x7f800000u | (m << 13));
	if (e)
		return from_bits(sign | ((e + 112) << 23) | (m << 13));
	float v = ldexpf((float)m, -24);           /* zero or subnormal: exact */
	return sign ? -v : v;
}

int ref_cast(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
	     enum ops_dtype yt)
{
	(void)ctx;
	const float *xf = x;
	const uint16_t *xh = x;
	float *yf = y;
	uint16_t *yh = y;
	if (xt == OPS_F32 && yt == OPS_BF16)
		for (size_t i = 0; i < count; i++)
			yh[i] = ref_f32_to_bf16(xf[i]);
	else if (xt == OPS_F32 && yt == OPS_F16)
		for (size_t i = 0; i < count; i++)
			yh[i] = ref_f32_to_f16(xf[i]);
	else if (xt == OPS_BF16 && yt == OPS_F32)
		for (size_t i = 0; i < count; i++)
			yf[i] = ref_bf16_to_f32(xh[i]);
	else if (xt == OPS_F16 && yt == OPS_F32)
		for (size_t i = 0; i < count; i++)
			yf[i] = ref_f16_to_f32(xh[i]);
	else
		return error("cast from type %d to type %d: one side must be fp32, the other bf16 or fp16",
			     (int)xt, (int)yt);
	return 0;
}
