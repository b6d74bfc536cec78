/* A net using every layer type, run through trialimg/model on the CPU op
 * table, against a plain C reference forward and backward written here. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trialimg/model.h"
#include "util.h"

enum { N = 3, H = 6, W = 6, C = 2, K = 5 };

static const char *net =
	"{\"format\":\"aah-arch/1\",\"input\":{\"height\":6,\"width\":6,\"channels\":2},"
	"\"num_classes\":5,\"output\":\"out\",\"layers\":["
	"{\"id\":\"c1\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":4,\"kernel\":3},"
	"{\"id\":\"bn1\",\"type\":\"batchnorm\",\"inputs\":[\"c1\"],\"epsilon\":0.001},"
	"{\"id\":\"r1\",\"type\":\"relu\",\"inputs\":[\"bn1\"]},"
	"{\"id\":\"mp\",\"type\":\"maxpool\",\"inputs\":[\"r1\"],\"kernel\":2},"
	"{\"id\":\"c2\",\"type\":\"conv2d\",\"inputs\":[\"mp\"],\"filters\":4,\"kernel\":1,\"bias\":false},"
	"{\"id\":\"ad\",\"type\":\"add\",\"inputs\":[\"c2\",\"mp\"]},"
	"{\"id\":\"ar\",\"type\":\"relu\",\"inputs\":[\"ad\"]},"
	"{\"id\":\"cc\",\"type\":\"concat\",\"inputs\":[\"ar\",\"mp\"]},"
	"{\"id\":\"ap\",\"type\":\"avgpool\",\"inputs\":[\"cc\"],\"kernel\":2,\"stride\":1,\"padding\":\"same\"},"
	"{\"id\":\"dr\",\"type\":\"dropout\",\"inputs\":[\"ap\"],\"rate\":0.3},"
	"{\"id\":\"fl\",\"type\":\"flatten\",\"inputs\":[\"dr\"]},"
	"{\"id\":\"gp\",\"type\":\"global_avg_pool\",\"inputs\":[\"cc\"]},"
	"{\"id\":\"c3\",\"type\":\"concat\",\"inputs\":[\"fl\",\"gp\"]},"
	"{\"id\":\"out\",\"type\":\"dense\",\"inputs\":[\"c3\"],\"units\":5}]}";

/* ---- plain C reference ops (NHWC) -------------------------------------- */

static void conv_f(const float *x, int h, int w, int c, const float *wt, const float *b, int co,
		   int k, int pt, int pl, int ho, int wo, float *y)
{
	for (int n = 0; n < N; n++)
		for (int oy = 0; oy < ho; oy++)
			for (int ox = 0; ox < wo; ox++)
				for (int o = 0; o < co; o++) {
					double s = b ? b[o] : 0;
					for (int ky = 0; ky < k; ky++)
						for (int kx = 0; kx < k; kx++) {
							int iy = oy + ky - pt, ix = ox + kx - pl;
							if (iy < 0 || iy >= h || ix < 0 || ix >= w)
								continue;
							for (int i = 0; i < c; i++)
								s += (double)x[((n * h + iy) * w + ix) * c + i] *
								     wt[((o * k + ky) * k + kx) * c + i];
						}
					y[((n * ho + oy) * wo + ox) * co + o] = (float)s;
				}
}

static void conv_b(const float *x, int h, int w, int c, const float *wt, int co, int k, int pt,
		   int pl, int ho, int wo, const float *dy, float *dx, float *dw, float *db)
{
	if (dx)
		memset(dx, 0, sizeof(float) * N * h * w * c);
	memset(dw, 0, sizeof(float) * co * k * k * c);
	if (db)
		memset(db, 0, sizeof(float) * co);
	for (int n = 0; n < N; n++)
		for (int oy = 0; oy < ho; oy++)
			for (int ox = 0; ox < wo; ox++)
				for (int o = 0; o < co; o++) {
					float g = dy[((n * ho + oy) * wo + ox) * co + o];
					if (db)
						db[o] += g;
					for (int ky = 0; ky < k; ky++)
						for (int kx = 0; kx < k; kx++) {
							int iy = oy + ky - pt, ix = ox + kx - pl;
							if (iy < 0 || iy >= h || ix < 0 || ix >= w)
								continue;
							for (int i = 0; i < c; i++) {
								size_t xi = ((size_t)(n * h + iy) * w + ix) * c + i;
								size_t wi = ((size_t)(o * k + ky) * k + kx) * c + i;
								dw[wi] += g * x[xi];
								if (dx)
									dx[xi] += g * wt[wi];
							}
						}
				}
}

static void bn_f(const float *x, int m, int c, const float *g, const float *b, float eps,
		 float *y, float *mean, float *istd)
{
	for (int ch = 0; ch < c; ch++) {
		double s = 0, ss = 0;
		for (int i = 0; i < m; i++)
			s += x[i * c + ch];
		s /= m;
		for (int i = 0; i < m; i++)
			ss += (x[i * c + ch] - s) * (x[i * c + ch] - s);
		ss /= m;
		mean[ch] = (float)s;
		istd[ch] = (float)(1.0 / sqrt(ss + eps));
		for (int i = 0; i < m; i++)
			y[i * c + ch] = g[ch] * (x[i * c + ch] - mean[ch]) * istd[ch] + b[ch];
	}
}

static void bn_b(const float *x, int m, int c, const float *g, const float *mean,
		 const float *istd, const float *dy, float *dx, float *dg, float *db)
{
	for (int ch = 0; ch < c; ch++) {
		double sdy = 0, sdyx = 0;
		for (int i = 0; i < m; i++) {
			double xh = (x[i * c + ch] - mean[ch]) * istd[ch];
			sdy += dy[i * c + ch];
			sdyx += dy[i * c + ch] * xh;
		}
		dg[ch] = (float)sdyx;
		db[ch] = (float)sdy;
		for (int i = 0; i < m; i++) {
			double xh = (x[i * c + ch] - mean[ch]) * istd[ch];
			dx[i * c + ch] = (float)(g[ch] * istd[ch] / m *
						 (m * dy[i * c + ch] - sdy - xh * sdyx));
		}
	}
}

/* Max or average (excluding padding) pooling, forward and backward. */
static void pool(int max, const float *x, int h, int w, int c, int k, int s, int pt, int pl,
		 int ho, int wo, float *y, const float *dy, float *dx)
{
	if (dx)
		memset(dx, 0, sizeof(float) * N * h * w * c);
	for (int n = 0; n < N; n++)
		for (int oy = 0; oy < ho; oy++)
			for (int ox = 0; ox < wo; ox++)
				for (int ch = 0; ch < c; ch++) {
					double acc = max ? -DBL_MAX : 0;
					int cnt = 0;
					size_t arg = 0;
					for (int ky = 0; ky < k; ky++)
						for (int kx = 0; kx < k; kx++) {
							int iy = oy * s + ky - pt, ix = ox * s + kx - pl;
							if (iy < 0 || iy >= h || ix < 0 || ix >= w)
								continue;
							size_t xi = ((size_t)(n * h + iy) * w + ix) * c + ch;
							if (max && x[xi] > acc)
								acc = x[xi], arg = xi;
							if (!max)
								acc += x[xi];
							cnt++;
						}
					size_t yi = ((size_t)(n * ho + oy) * wo + ox) * c + ch;
					if (y)
						y[yi] = (float)(max ? acc : acc / cnt);
					if (!dx)
						continue;
					if (max) {
						dx[arg] += dy[yi];
						continue;
					}
					for (int ky = 0; ky < k; ky++)
						for (int kx = 0; kx < k; kx++) {
							int iy = oy * s + ky - pt, ix = ox * s + kx - pl;
							if (iy >= 0 && iy < h && ix >= 0 && ix < w)
								dx[((size_t)(n * h + iy) * w + ix) * c + ch] +=
									dy[yi] / cnt;
						}
				}
}

/* channel concat of two tensors with `pix` pixels each */
static void cat_f(const float *a, int ca, const float *b, int cb, int pix, float *y)
{
	for (int p = 0; p < pix; p++) {
		memcpy(y + p * (ca + cb), a + p * ca, sizeof(float) * ca);
		memcpy(y + p * (ca + cb) + ca, b + p * cb, sizeof(float) * cb);
	}
}

static void cat_b(const float *dy, int ca, int cb, int pix, float *da, float *db)
{
	for (int p = 0; p < pix; p++) {
		memcpy(da + p * ca, dy + p * (ca + cb), sizeof(float) * ca);
		memcpy(db + p * cb, dy + p * (ca + cb) + ca, sizeof(float) * cb);
	}
}

static uint64_t seed = 99;
static float frand(void)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(seed >> 11) / 9007199254740992.0) * 2 - 1;
}

static void close_enough(const char *what, const float *a, const float *ref, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_assert(fabsf(a[i] - ref[i]) <= 1e-4f + 1e-3f * fabsf(ref[i]),
			  "%s[%zu]: model %g, reference %g", what, i, (double)a[i], (double)ref[i]);
}

#define L(id) (&m.layers[model_find(&m, id)])
#define A(n) float n[N * 6 * 6 * 8]

Test(kernels, every_layer_type_net_matches_reference)
{
	struct model m;
	struct ops_ctx ctx;
	cJSON *doc = cJSON_Parse(net);
	cr_assert_eq(model_parse(&m, doc, "net"), 0, "%s", util_last_error());
	cJSON_Delete(doc);
	for (int t = 0; t < OPS_NTYPES; t++) {
		int seen = 0;
		for (int i = 0; i < m.n_layers; i++)
			seen |= m.layers[i].op.cfg.type == (enum ops_type)t;
		cr_assert(seen, "the net lacks a %s layer", ops_backend_find("cpu")->layer[t]->name);
	}
	cr_assert_eq(model_alloc(&m, N, 5), 0);
	cr_assert_eq(ops_ctx_init(&ctx, "cpu", 1, 11), 0);
	for (size_t i = m.n_decayed; i < m.n_params; i++)  /* non-trivial biases, BN affine */
		m.params[i] = 0.5f + 0.5f * frand();
	float x[N * H * W * C], g[N * K];
	for (size_t i = 0; i < ARRAY_SIZE(x); i++)
		x[i] = frand();
	for (size_t i = 0; i < ARRAY_SIZE(g); i++)
		g[i] = frand();
	cr_assert_eq(model_forward(&m, &ctx, x, N, 1), 0);
	cr_assert_eq(model_backward(&m, &ctx, x, N, g), 0);

	/* reference forward */
	A(c1); A(bn1); A(r1); A(mp); A(c2); A(ad); A(cc); A(ap); A(dr); A(gp); A(c3);
	float mean[4], istd[4], out[N * K];
	struct ops_layer *o;
	o = &L("c1")->op;
	conv_f(x, 6, 6, 2, o->w, o->b, 4, 3, 1, 1, 6, 6, c1);
	o = &L("bn1")->op;
	bn_f(c1, N * 36, 4, o->gamma, o->beta, 0.001f, bn1, mean, istd);
	for (int i = 0; i < N * 36 * 4; i++)
		r1[i] = bn1[i] > 0 ? bn1[i] : 0;
	pool(1, r1, 6, 6, 4, 2, 2, 0, 0, 3, 3, mp, NULL, NULL);
	o = &L("c2")->op;
	conv_f(mp, 3, 3, 4, o->w, NULL, 4, 1, 0, 0, 3, 3, c2);
	for (int i = 0; i < N * 9 * 4; i++) {
		ad[i] = c2[i] + mp[i];
		ad[i] = ad[i] > 0 ? ad[i] : 0;   /* ar = relu(ad), fused into the add */
	}
	cat_f(ad, 4, mp, 4, N * 9, cc);
	pool(0, cc, 3, 3, 8, 2, 1, 0, 0, 3, 3, ap, NULL, NULL);
	const uint8_t *mask = L("dr")->op.mask;
	for (int i = 0; i < N * 72; i++)
		dr[i] = mask[i] ? ap[i] / 0.7f : 0;
	for (int n = 0; n < N; n++)
		for (int ch = 0; ch < 8; ch++) {
			double s = 0;
			for (int p = 0; p < 9; p++)
				s += cc[(n * 9 + p) * 8 + ch];
			gp[n * 8 + ch] = (float)(s / 9);
		}
	for (int n = 0; n < N; n++)
		cat_f(dr + n * 72, 72, gp + n * 8, 8, 1, c3 + n * 80);
	o = &L("out")->op;
	for (int n = 0; n < N; n++)
		for (int u = 0; u < K; u++) {
			double s = o->b[u];
			for (int i = 0; i < 80; i++)
				s += (double)c3[n * 80 + i] * o->w[u * 80 + i];
			out[n * K + u] = (float)s;
		}
	/* bn1 -> r1 runs as one fused batchnorm+relu op */
	cr_assert(L("bn1")->op.cfg.fuse_relu && L("r1")->fused);
	cr_assert(L("ad")->op.cfg.fuse_relu && L("ar")->fused);
	close_enough("r1", L("r1")->act, r1, N * 36 * 4);
	close_enough("cc", L("cc")->act, cc, N * 72);
	close_enough("logits", model_logits(&m), out, N * K);

	/* reference backward */
	A(dc3); A(ddr); A(dgp); A(dap); A(dcc); A(dad); A(dmp); A(dtmp); A(dr1); A(dbn1); A(dc1);
	float dw_out[K * 80], db_out[K], dw_c2[16], dw_c1[4 * 9 * 2], db_c1[4], dgam[4], dbet[4];
	for (int n = 0; n < N; n++)
		for (int i = 0; i < 80; i++) {
			double s = 0;
			for (int u = 0; u < K; u++)
				s += (double)g[n * K + u] * o->w[u * 80 + i];
			dc3[n * 80 + i] = (float)s;
		}
	for (int u = 0; u < K; u++) {
		double sb = 0;
		for (int n = 0; n < N; n++)
			sb += g[n * K + u];
		db_out[u] = (float)sb;
		for (int i = 0; i < 80; i++) {
			double s = 0;
			for (int n = 0; n < N; n++)
				s += (double)g[n * K + u] * c3[n * 80 + i];
			dw_out[u * 80 + i] = (float)s;
		}
	}
	for (int n = 0; n < N; n++)
		cat_b(dc3 + n * 80, 72, 8, 1, ddr + n * 72, dgp + n * 8);
	for (int i = 0; i < N * 72; i++)
		dap[i] = mask[i] ? ddr[i] / 0.7f : 0;
	pool(0, cc, 3, 3, 8, 2, 1, 0, 0, 3, 3, NULL, dap, dcc);
	for (int n = 0; n < N; n++)        /* cc feeds both ap and gp */
		for (int p = 0; p < 9; p++)
			for (int ch = 0; ch < 8; ch++)
				dcc[(n * 9 + p) * 8 + ch] += dgp[n * 8 + ch] / 9;
	cat_b(dcc, 4, 4, N * 9, dad, dtmp);  /* dtmp: mp's share through cc */
	for (int i = 0; i < N * 36; i++)     /* through ar = relu(ad): ad holds ar */
		dad[i] = ad[i] > 0 ? dad[i] : 0;
	for (int i = 0; i < N * 36; i++)
		dmp[i] = dtmp[i] + dad[i];        /* through cc and through add */
	o = &L("c2")->op;
	conv_b(mp, 3, 3, 4, o->w, 4, 1, 0, 0, 3, 3, dad, dtmp, dw_c2, NULL);
	for (int i = 0; i < N * 36; i++)
		dmp[i] += dtmp[i];
	pool(1, r1, 6, 6, 4, 2, 2, 0, 0, 3, 3, NULL, dmp, dr1);
	for (int i = 0; i < N * 144; i++)
		dbn1[i] = bn1[i] > 0 ? dr1[i] : 0;
	o = &L("bn1")->op;
	bn_b(c1, N * 36, 4, o->gamma, mean, istd, dbn1, dc1, dgam, dbet);
	o = &L("c1")->op;
	conv_b(x, 6, 6, 2, o->w, 4, 3, 1, 1, 6, 6, dc1, NULL, dw_c1, db_c1);

	close_enough("d out.w", L("out")->op.dw, dw_out, K * 80);
	close_enough("d out.b", L("out")->op.db, db_out, K);
	close_enough("d cc", L("cc")->dact, dcc, N * 72);
	close_enough("d mp", L("mp")->dact, dmp, N * 36);
	close_enough("d c2.w", L("c2")->op.dw, dw_c2, 16);
	close_enough("d bn1.gamma", L("bn1")->op.dgamma, dgam, 4);
	close_enough("d bn1.beta", L("bn1")->op.dbeta, dbet, 4);
	close_enough("d c1.w", L("c1")->op.dw, dw_c1, 72);
	close_enough("d c1.b", L("c1")->op.db, db_c1, 4);
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
}
