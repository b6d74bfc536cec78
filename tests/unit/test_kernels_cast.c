/* Unit tests for the cast op: kernels/ref's fp32 <-> bf16 and fp32 <-> fp16
 * against hand-computed bit patterns and against the definition (nearest
 * representable value, ties to even), then every backend that has a cast op
 * against ref, bit for bit. The cuda backend's cases are reported
 * "skipped: no CUDA device ..." on a machine without a GPU. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "kernels/ops.h"
#include "kernels/ref/ref.h"
#include "util.h"

static float f32(uint32_t u)
{
	float v;
	memcpy(&v, &u, sizeof(v));
	return v;
}

static uint32_t u32(float v)
{
	uint32_t u;
	memcpy(&u, &v, sizeof(u));
	return u;
}

struct pattern { uint32_t f; uint16_t h; const char *what; };

static const struct pattern bf16_down[] = {
	{ 0x3f800000, 0x3f80, "1" },
	{ 0x3f808000, 0x3f80, "1 + half an ulp: tie, to the even 0x3f80" },
	{ 0x3f818000, 0x3f82, "tie above the odd 0x3f81: up to even" },
	{ 0x3f808001, 0x3f81, "just above the tie" },
	{ 0x3f807fff, 0x3f80, "just below the tie" },
	{ 0xc0000000, 0xc000, "-2" },
	{ 0x3dcccccd, 0x3dcd, "0.1" },
	{ 0x7f7fffff, 0x7f80, "fp32's largest: rounds to inf" },
	{ 0x7f7f7fff, 0x7f7f, "below the rounding into inf" },
	{ 0x7f800000, 0x7f80, "inf" },
	{ 0xff800000, 0xff80, "-inf" },
	{ 0x7fc00000, 0x7fc0, "quiet NaN" },
	{ 0x7f800001, 0x7fc0, "signalling NaN with a low payload: quiet, not inf" },
	{ 0xff812345, 0xffc1, "negative NaN: sign and top payload kept" },
	{ 0x00000001, 0x0000, "fp32's smallest subnormal" },
	{ 0x00018000, 0x0002, "subnormal tie above odd" },
	{ 0x80000000, 0x8000, "-0" },
};

static const struct pattern f16_down[] = {
	{ 0x3f800000, 0x3c00, "1" },
	{ 0x3dcccccd, 0x2e66, "0.1" },
	{ 0x3f801000, 0x3c00, "1 + half an ulp: tie, to even" },
	{ 0x3f803000, 0x3c02, "tie above the odd 0x3c01: up" },
	{ 0x3f801001, 0x3c01, "just above the tie" },
	{ 0x477fe000, 0x7bff, "65504, fp16's largest" },
	{ 0x477fefff, 0x7bff, "just below 65520" },
	{ 0x477ff000, 0x7c00, "65520: the tie rounds to inf" },
	{ 0x4f000000, 0x7c00, "2^31: inf" },
	{ 0x38800000, 0x0400, "2^-14, the smallest normal" },
	{ 0x387fe000, 0x0400, "tie between the largest subnormal and 2^-14: up to even" },
	{ 0x387fc000, 0x03ff, "the largest subnormal" },
	{ 0x38000000, 0x0200, "2^-15, subnormal" },
	{ 0x33800000, 0x0001, "2^-24, the smallest subnormal" },
	{ 0x33c00000, 0x0002, "1.5 * 2^-24: tie, to even" },
	{ 0x33000001, 0x0001, "just above 2^-25" },
	{ 0x33000000, 0x0000, "2^-25: tie, to zero" },
	{ 0x80000000, 0x8000, "-0" },
	{ 0xff800000, 0xfc00, "-inf" },
	{ 0x7fc00000, 0x7e00, "quiet NaN" },
	{ 0x7f802000, 0x7e01, "signalling NaN: quiet, top payload kept" },
};

Test(cast_ref, bf16_bit_patterns)
{
	for (size_t i = 0; i < sizeof(bf16_down) / sizeof(*bf16_down); i++) {
		const struct pattern *p = &bf16_down[i];
		uint16_t h = ref_f32_to_bf16(f32(p->f));
		cr_expect_eq(h, p->h, "bf16(%08x) %s: got %04x, want %04x", p->f, p->what, h, p->h);
	}
	cr_assert_eq(u32(ref_bf16_to_f32(0x3f81)), 0x3f810000);
	cr_assert_eq(u32(ref_bf16_to_f32(0xff80)), 0xff800000);
	cr_assert_eq(u32(ref_bf16_round(f32(0x3f818000))), 0x3f820000);
}

Test(cast_ref, f16_bit_patterns)
{
	for (size_t i = 0; i < sizeof(f16_down) / sizeof(*f16_down); i++) {
		const struct pattern *p = &f16_down[i];
		uint16_t h = ref_f32_to_f16(f32(p->f));
		cr_expect_eq(h, p->h, "fp16(%08x) %s: got %04x, want %04x", p->f, p->what, h, p->h);
	}
	static const struct { uint16_t h; uint32_t f; } up[] = {
		{ 0x0001, 0x33800000 }, { 0x8001, 0xb3800000 }, { 0x03ff, 0x387fc000 },
		{ 0x0400, 0x38800000 }, { 0x7bff, 0x477fe000 }, { 0x3c00, 0x3f800000 },
		{ 0xfc00, 0xff800000 }, { 0x7e00, 0x7fc00000 }, { 0x8000, 0x80000000 },
	};
	for (size_t i = 0; i < sizeof(up) / sizeof(*up); i++)
		cr_expect_eq(u32(ref_f16_to_f32(up[i].h)), up[i].f, "fp16 %04x -> %08x, got %08x",
			     up[i].h, up[i].f, u32(ref_f16_to_f32(up[i].h)));
}

/* Every 16-bit pattern that is not a NaN comes back to itself through
 * fp32, and a NaN stays a NaN. */
Test(cast_ref, every_16_bit_pattern_round_trips)
{
	for (uint32_t i = 0; i <= 0xffff; i++) {
		uint16_t h = (uint16_t)i;
		float b = ref_bf16_to_f32(h), f = ref_f16_to_f32(h);
		if (isnan(b))
			cr_assert(isnan(ref_bf16_to_f32(ref_f32_to_bf16(b))));
		else
			cr_assert_eq(ref_f32_to_bf16(b), h, "bf16 %04x", h);
		if (isnan(f))
			cr_assert(isnan(ref_f16_to_f32(ref_f32_to_f16(f))));
		else
			cr_assert_eq(ref_f32_to_f16(f), h, "fp16 %04x", h);
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* The definition: the result is the representable value nearest to v (in
 * double, exact here), and on a tie the one with an even last bit. h's
 * neighbours are h +- 1 in the same sign (patterns are monotone in
 * magnitude); inf counts as the value past the largest finite one. */
static void check_nearest(float v, uint16_t h, float (*back)(uint16_t), uint16_t inf_bits,
			  double overflow_at, const char *name)
{
	double x = fabs((double)v), got = fabs((double)back(h));
	uint16_t mag = h & 0x7fffu;
	if (mag == inf_bits) {
		cr_assert_geq(x, overflow_at, "%s(%a) = inf", name, v);
		return;
	}
	cr_assert_lt(x, overflow_at, "%s(%a) finite", name, v);
	double below = mag ? fabs((double)back((uint16_t)(mag - 1))) : -1;
	double above = (uint16_t)(mag + 1) == inf_bits ? overflow_at * 2 - got
						       : fabs((double)back((uint16_t)(mag + 1)));
	double d = fabs(x - got);
	if (mag)
		cr_assert(d < x - below || (d == x - below && !(mag & 1)), "%s(%a): %04x", name, v, h);
	cr_assert(d < above - x || (d == above - x && !(mag & 1)), "%s(%a): %04x", name, v, h);
	cr_assert_eq(h >> 15, signbit(v) ? 1 : 0, "%s(%a) sign", name, v);
}

Test(cast_ref, random_floats_go_to_the_nearest_even)
{
	for (int i = 0; i < 200000; i++) {
		float v = f32(next32());
		if (isnan(v)) {
			cr_assert(isnan(ref_bf16_to_f32(ref_f32_to_bf16(v))));
			cr_assert(isnan(ref_f16_to_f32(ref_f32_to_f16(v))));
			continue;
		}
		/* bf16 overflows from the midpoint of its largest and 2^128 */
		check_nearest(v, ref_f32_to_bf16(v), ref_bf16_to_f32, 0x7f80,
			      ldexp(1.0, 128) - ldexp(1.0, 127 - 8), "bf16");
		/* fp16 draws from its own range too: scale into [2^-26, 2^17) */
		float w = ldexpf(fabsf(frexpf(v, &(int){ 0 })), (int)(next32() % 44) - 26);
		w = (next32() & 1) ? -w : w;
		check_nearest(w, ref_f32_to_f16(w), ref_f16_to_f32, 0x7c00, 65520.0, "fp16");
	}
}

Test(cast_ref, bad_types_are_refused)
{
	float x = 1, y;
	util_set_quiet(1);
	cr_assert_lt(ref_cast(NULL, 1, &x, OPS_F32, &y, OPS_F32), 0);
	cr_assert(strstr(util_last_error(), "one side must be fp32"));
}

/* ---- every backend with a cast op, against ref ------------------------------ */

#define N_RANDOM 100000

/* fp32 inputs: the patterns above, then random bits; 16-bit inputs: all. */
static float *f32_inputs(size_t *n)
{
	size_t np = sizeof(bf16_down) / sizeof(*bf16_down) + sizeof(f16_down) / sizeof(*f16_down);
	float *x = xmalloc((np + N_RANDOM) * sizeof(float));
	size_t k = 0;
	for (size_t i = 0; i < sizeof(bf16_down) / sizeof(*bf16_down); i++)
		x[k++] = f32(bf16_down[i].f);
	for (size_t i = 0; i < sizeof(f16_down) / sizeof(*f16_down); i++)
		x[k++] = f32(f16_down[i].f);
	for (int i = 0; i < N_RANDOM; i++)
		x[k++] = (i & 1) ? f32(next32()) : ldexpf((float)(next32() & 0xffffff), -40 + i % 64);
	*n = k;
	return x;
}

/* NaNs need only be NaNs (CUDA gives its canonical NaN); all else bit-exact. */
static int same16(uint16_t a, uint16_t b, float (*back)(uint16_t))
{
	return a == b || (isnan(back(a)) && isnan(back(b)));
}

static void check_backend(const struct ops_backend *be)
{
	struct ops_ctx ctx;
	util_set_quiet(1);
	if (ops_ctx_init(&ctx, be->name, 2, 7)) {
		if (be->caps & OPS_CAP_GPU)
			cuda_unavailable(be->name, util_last_error(), "casts");
		cr_skip_test("skipped: %s cannot start here (%s)", be->name, util_last_error());
	}
	size_t n;
	float *x = f32_inputs(&n), *y = xmalloc(65536 * sizeof(float));
	float *want_f = xmalloc(65536 * sizeof(float));
	uint16_t *h = xmalloc(n * 2), *want = xmalloc(n * 2), all[65536];
	for (uint32_t i = 0; i <= 0xffff; i++)
		all[i] = (uint16_t)i;
	static const struct {
		enum ops_dtype t;
		const char *name;
		float (*back)(uint16_t);
	} types[] = { { OPS_BF16, "bf16", ref_bf16_to_f32 }, { OPS_F16, "fp16", ref_f16_to_f32 } };
	for (int t = 0; t < 2; t++) {
		cr_assert_eq(be->cast(&ctx, n, x, OPS_F32, h, types[t].t), 0, "%s", util_last_error());
		cr_assert_eq(ref_cast(NULL, n, x, OPS_F32, want, types[t].t), 0);
		for (size_t i = 0; i < n; i++)
			cr_assert(same16(h[i], want[i], types[t].back), "%s: fp32 %08x -> %s %04x, ref %04x",
				  be->name, u32(x[i]), types[t].name, h[i], want[i]);
		cr_assert_eq(be->cast(&ctx, 65536, all, types[t].t, y, OPS_F32), 0, "%s",
			     util_last_error());
		cr_assert_eq(ref_cast(NULL, 65536, all, types[t].t, want_f, OPS_F32), 0);
		for (uint32_t i = 0; i <= 0xffff; i++)
			cr_assert(u32(y[i]) == u32(want_f[i]) || (isnan(y[i]) && isnan(want_f[i])),
				  "%s: %s %04x -> %08x, ref %08x", be->name, types[t].name, i, u32(y[i]),
				  u32(want_f[i]));
	}
	cr_assert_lt(be->cast(&ctx, 1, x, OPS_BF16, h, OPS_F16), 0);
	ops_ctx_release(&ctx);
	free(x);
	free(y);
	free(want_f);
	free(h);
	free(want);
}

/* The CPU backend has no cast op (its bf16 is oneDNN converting inside the
 * convolution), so the GPU backend is the one tested here. */
Test(cast_backends, cuda_matches_ref)
{
	const struct ops_backend *be = ops_backend_find("cuda");
	if (!be)
		cuda_not_built("casts");
	cr_assert_not_null(be->cast);
	check_backend(be);
}
