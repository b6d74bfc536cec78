/* ssh_keys.h: OpenSSH key pairs made with libcrypto, for the sshd and the
 * mpirun of trial.launcher: mpi in containers (no ssh-keygen needed where
 * the runner runs). */
#ifndef AAH_SSH_KEYS_H
#define AAH_SSH_KEYS_H

#include "strbuf.h"

/* A new ECDSA P-256 key pair: the private key as PEM (PKCS#8, which
 * OpenSSH reads as an identity or host key) and the public key as one
 * authorized_keys / known_hosts line "ecdsa-sha2-nistp256 <base64>", no
 * newline. Returns 0, or -1 with an error. */
int ssh_keypair_new(struct strbuf *priv_pem, struct strbuf *pub_line);

#endif
