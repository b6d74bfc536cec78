/* ssh_keys.c: OpenSSH ECDSA P-256 key pairs from libcrypto (RFC 5656's
 * public key blob: string "ecdsa-sha2-nistp256", string "nistp256",
 * string Q as an uncompressed point). */
#include "runner/backend/ssh_keys.h"
#include "util.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#define SSH_ECDSA_TYPE "ecdsa-sha2-nistp256"

static void put_string(struct strbuf *sb, const void *p, size_t n)
{
	unsigned char len[4] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16),
				 (unsigned char)(n >> 8), (unsigned char)n };
	strbuf_add(sb, len, 4);
	strbuf_add(sb, p, n);
}

int ssh_keypair_new(struct strbuf *priv_pem, struct strbuf *pub_line)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	unsigned char q[65];
	size_t qlen = 0;
	int r = 0;
	if (!k)
		return error("ssh key: cannot generate an ECDSA P-256 key");
	if (!EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, q, sizeof(q),
					     &qlen) || qlen != sizeof(q) || q[0] != 4)
		r = error("ssh key: the public point is not an uncompressed P-256 point");

	BIO *bio = r == 0 ? BIO_new(BIO_s_mem()) : NULL;
	if (r == 0 && (!bio || !PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL)))
		r = error("ssh key: cannot write the private key as PEM");
	if (r == 0) {
		char *mem;
		long n = BIO_get_mem_data(bio, &mem);
		strbuf_add(priv_pem, mem, (size_t)n);

		struct strbuf blob = STRBUF_INIT;
		put_string(&blob, SSH_ECDSA_TYPE, strlen(SSH_ECDSA_TYPE));
		put_string(&blob, "nistp256", 8);
		put_string(&blob, q, qlen);
		char *b64 = xmalloc(4 * ((blob.len + 2) / 3) + 1);
		EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)blob.buf, (int)blob.len);
		strbuf_addf(pub_line, "%s %s", SSH_ECDSA_TYPE, b64);
		free(b64);
		strbuf_release(&blob);
	}
	BIO_free(bio);
	EVP_PKEY_free(k);
	return r;
}
