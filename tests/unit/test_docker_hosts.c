/* Unit tests for docker.hosts (runner/backend/docker_hosts.c): the inline
 * list and AIPerf's servers.json (the upstream file, unchanged), errors
 * that name the file, line, column and field, the pool's devices going
 * round the hosts' slots, a rank's container on a host's GPU
 * (docker_spec.c), and ledger_place journaling the device ids a backend
 * picks (runner/pool/ledger.c). No ssh, no engine. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "runner/backend/backend.h" /* backend_config_load */
#include "runner/backend/docker.h"
#include "runner/backend/docker_fleet.h"
#include "runner/backend/docker_hosts.h"
#include "runner/config/config.h"
#include "runner/launch.h"
#include "runner/pool/ledger.h"
#include "strbuf.h"
#include "util.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-dhosts-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(docker_hosts, .init = setup, .fini = teardown);

static void put(const char *name, const char *text)
{
	char *p = xstrfmt("%s/%s", tmpdir, name);
	cr_assert_eq(fileio_write_atomic(p, text, strlen(text)), 0);
	free(p);
}

/* Parse docker.hosts of a config whose docker section is `docker`. */
static int parse(const char *docker, struct aah_config *cfg, struct docker_hosts *hs)
{
	char *text = xstrfmt("experimentName: h\ntrainingServicePlatform: docker\n"
			     "trial:\n  command: t.sh\ndocker:\n%s", docker);
	put("c.yml", text);
	free(text);
	char *p = xstrfmt("%s/c.yml", tmpdir);
	cr_assert_eq(backend_config_load(p, cfg), 0, "%s", util_last_error());
	free(p);
	return docker_hosts_parse(cfg, hs);
}

Test(docker_hosts, an_inline_list_with_users_ports_slots_and_gpus)
{
	struct aah_config cfg;
	struct docker_hosts hs;
	cr_assert_eq(parse("  hosts:\n"
			   "    - {address: node1, user: aiperf, port: 2222, slots: 2}\n"
			   "    - {address: 10.0.0.7, gpus: [0, 1, 5]}\n"
			   "    - address: node3\n",
			   &cfg, &hs), 0, "%s", util_last_error());
	cr_assert_eq(hs.n, 3);
	cr_assert_eq(hs.slots, 6);
	cr_assert_str_eq(hs.h[0].url, "ssh://aiperf@node1:2222");
	cr_assert_eq(hs.h[0].slots, 2);
	cr_assert_null(hs.h[0].gpus);
	cr_assert_str_eq(hs.h[1].url, "ssh://10.0.0.7");
	cr_assert_eq(hs.h[1].slots, 3);
	cr_assert_str_eq(hs.h[1].gpus[2], "5");
	cr_assert_eq(hs.h[2].slots, 1);
	cr_assert_eq(docker_hosts_find(&hs, "node3"), &hs.h[2]);
	cr_assert_null(docker_hosts_find(&hs, "node4"));
	docker_hosts_release(&hs);
	config_release(&cfg);
}

Test(docker_hosts, aiperf_servers_json_as_upstream_writes_it)
{
	struct aah_config cfg;
	struct docker_hosts hs;
	char *text = NULL;
	size_t len;
	cr_assert_eq(fileio_read("tests/fixtures/upstream-configs/aiperf-thu-servers.json", 0, &text,
				 &len), 0);
	put("servers.json", text);
	free(text);
	cr_assert_eq(parse("  hosts: servers.json\n", &cfg, &hs), 0, "%s", util_last_error());
	cr_assert_eq(hs.n, 1);
	cr_assert_str_eq(hs.h[0].name, "172.23.33.33");
	cr_assert_str_eq(hs.h[0].url, "ssh://172.23.33.33");
	cr_assert_eq(hs.h[0].slots, 1);
	cr_assert_str_eq(hs.h[0].gpus[0], "0");
	docker_hosts_release(&hs);
	config_release(&cfg);
}

/* The config (or servers.json) is refused with a message holding want. */
static void refused(const char *docker, const char *servers, const char *want)
{
	struct aah_config cfg;
	struct docker_hosts hs;
	if (servers)
		put("servers.json", servers);
	cr_assert_eq(parse(docker, &cfg, &hs), -1, "accepted: %s", docker);
	cr_assert(strstr(util_last_error(), want), "'%s' does not say '%s'", util_last_error(),
		  want);
	config_release(&cfg);
}

Test(docker_hosts, errors_name_the_file_line_column_and_field)
{
	refused("  hosts:\n    - {address: a, port: 70000}\n", NULL,
		"c.yml:7:26: 'docker.hosts[0].port': must be an integer, 1 to 65535, got 70000");
	refused("  hosts:\n    - address: a\n    - {address: b, colour: red}\n", NULL,
		"c.yml:8:20: 'docker.hosts[1].colour' is not a known key");
	refused("  hosts:\n    - {user: root}\n", NULL,
		"c.yml:7:7: 'docker.hosts[0]': needs an address");
	refused("  hosts:\n    - a\n", NULL, "c.yml:7:7: 'docker.hosts[0]': must be a mapping");
	refused("  hosts:\n    - {address: a}\n    - {address: a}\n", NULL,
		"c.yml:8:7: 'docker.hosts[1]': lists a host listed before: a");
	refused("  hosts:\n    - {address: a, slots: 3, gpus: \"0,1\"}\n", NULL,
		"'docker.hosts[0].slots': must be the number of its GPUs");
	refused("  hosts:\n    - {address: 'a b'}\n", NULL,
		"'docker.hosts[0].address': must be letters, digits");
	refused("  hosts: []\n", NULL, "c.yml:6:10: 'docker.hosts' must be a list of 1 to");
	refused("  hosts: nowhere.json\n", NULL, "c.yml:6:10: 'docker.hosts': no such file");
	refused("  hosts: servers.json\n",
		"[\n  {\"ip\": \"n1\",\n   \"CUDA_VISIBLE_DEVICES\": \"0,,1\"}\n]\n",
		"servers.json:3:28: 'docker.hosts[0].CUDA_VISIBLE_DEVICES': has a GPU that is not");
	refused("  hosts: servers.json\n", "[{\"ip\": \"n1\"}, \"n2\"]\n",
		"servers.json:1:16: 'docker.hosts[1]': must be a mapping");
	refused("  hosts: servers.json\n", "[{\"ip\": \"n1\"\n", "is not a JSON or YAML list");
}

Test(docker_hosts, the_pools_devices_go_round_the_hosts_slots)
{
	struct aah_config cfg;
	struct docker_hosts hs;
	cr_assert_eq(parse("  hosts:\n    - {address: a, slots: 2}\n    - {address: b}\n"
			   "    - {address: c, slots: 3}\n", &cfg, &hs), 0);
	static const int host[] = { 0, 1, 2, 0, 2, 2 };
	static const unsigned slot[] = { 0, 0, 0, 1, 1, 2 };
	for (unsigned d = 0; d < 6; d++) {
		unsigned s = 99;
		cr_assert_eq(docker_hosts_device(&hs, d, &s), host[d], "device %u", d);
		cr_assert_eq(s, slot[d], "device %u", d);
	}
	unsigned s;
	cr_assert_eq(docker_hosts_device(&hs, 6, &s), -1);
	docker_hosts_release(&hs);
	config_release(&cfg);
}

Test(docker_hosts, a_rank_on_a_hosts_gpu_gets_that_gpu_alone_and_its_host_name)
{
	struct aah_config cfg;
	struct docker_config dc;
	struct aah_launch l;
	struct docker_hosts hs;
	static const char *const hosts[] = { "gpu7" };
	cr_assert_eq(parse("  image: aah-trial:cuda\n  hosts:\n    - {address: gpu7, gpus: \"0,3\"}\n",
			   &cfg, &hs), 0);
	memset(&dc, 0, sizeof(dc));
	cr_assert_eq(config_parse_section(&cfg, "docker", config_section(&cfg, "docker"),
					  docker_config_keys, &dc), 0);
	struct launch_params lp = { .cfg = &cfg, .expdir = "/userhome/w/experiments/e1",
				    .workdir = "/userhome/w", .experiment_id = "e1",
				    .trial_seq = 1, .attempt = 1, .hosts = hosts, .port = 29501,
				    .gpus = "0" };
	cr_assert_eq(launch_build(&l, &lp), 0);
	struct docker_rank_host on = { "gpu7", hs.h[0].gpus[1] };
	struct strvec argv = STRVEC_INIT;
	cr_assert_eq(docker_create_host_argv(&dc, &l, NULL, 0, "/userhome", &on, &argv), 0);
	struct strbuf all = STRBUF_INIT;
	for (size_t i = 0; i < argv.n; i++)
		strbuf_addf(&all, "%s\n", argv.v[i]);
	cr_assert(strstr(all.buf, "\n--gpus=device=3\n"), "%s", all.buf);
	cr_assert(strstr(all.buf, "\n-e\nAAH_HOST=gpu7\n"), "%s", all.buf);
	cr_assert(strstr(all.buf, "\n-e\nMASTER_ADDR=gpu7\n"), "%s", all.buf);
	/* the slot's one GPU, counted from 0 inside; the contract's value is not passed */
	const char *c = strstr(all.buf, "CUDA_VISIBLE_DEVICES=");
	cr_assert(c && !strncmp(c, "CUDA_VISIBLE_DEVICES=0\n", 23), "%s", all.buf);
	cr_assert_null(strstr(c + 1, "CUDA_VISIBLE_DEVICES="), "%s", all.buf);
	strbuf_release(&all);
	strvec_clear(&argv);
	launch_release(&l);
	config_release_section(docker_config_keys, &dc);
	docker_hosts_release(&hs);
	config_release(&cfg);
}

/* ledger_place's pick in the test: devices from `want`, or 1 (no fit). */
static int pick_want(const struct ledger *l, const struct ledger_training *t, const char *taken,
		     unsigned *ids, void *arg)
{
	const int *want = arg;
	(void)l;
	if (want[0] < 0)
		return 1;
	for (unsigned j = 0; j < t->applied; j++) {
		cr_assert_eq(taken[want[j]], 0, "device %d is another's", want[j]);
		ids[j] = (unsigned)want[j];
	}
	return 0;
}

Test(docker_hosts, ledger_place_journals_the_devices_picked_and_a_reader_sees_them)
{
	struct ledger l;
	unsigned got, *ids, n;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_join(&l, 4, "a/000001", 5000, 2, 2), 0);
	cr_assert_eq(ledger_claim(&l, "a/000001", &got), 0);
	cr_assert_eq(got, 2);   /* devices 0 and 1 */
	cr_assert_eq(ledger_join(&l, 4, "b/000001", 5000, 2, 2), 0);
	cr_assert_eq(ledger_claim(&l, "b/000001", &got), 0);
	cr_assert_eq(got, 2);   /* 2 and 3 */
	/* b moves to 3 and 2 (rank 0 on device 3); a's are taken for it. */
	int want[] = { 3, 2 };
	cr_assert_eq(ledger_place(&l, "b/000001", pick_want, want, &ids, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert(ids[0] == 3 && ids[1] == 2);
	free(ids);
	struct ledger fresh;
	ledger_init(&fresh, tmpdir);
	cr_assert_eq(ledger_read(&fresh), 0);
	const struct ledger_training *t = ledger_find(&fresh, "b/000001");
	cr_assert(t && t->applied == 2 && t->ids[0] == 3 && t->ids[1] == 2);
	unsigned long lines = fresh.next_seq;
	ledger_release(&fresh);
	/* The same again journals nothing; no fit changes nothing. */
	cr_assert_eq(ledger_place(&l, "b/000001", pick_want, want, &ids, &n), 0);
	free(ids);
	int none[] = { -1 };
	cr_assert_eq(ledger_place(&l, "b/000001", pick_want, none, &ids, &n), 1);
	cr_assert_null(ids);
	ledger_init(&fresh, tmpdir);
	cr_assert_eq(ledger_read(&fresh), 0);
	cr_assert_eq(fresh.next_seq, lines);
	ledger_release(&fresh);
	/* A training that holds nothing is placed nowhere. */
	cr_assert_eq(ledger_place(&l, "c/000001", pick_want, want, &ids, &n), 0);
	cr_assert_eq(n, 0);
	ledger_release(&l);
}

/* check: the pool is the hosts' slots; the MPI form's nodes fit on
 * distinct hosts. */
Test(docker_hosts, check_wants_the_pool_the_size_of_the_hosts_slots)
{
	struct aah_config cfg;
	struct docker_hosts hs;
	static const char *const cases[][2] = {
		{ "pool:\n  devices: 2\n", "c.yml:8:12: 'pool.devices': must be 3, the slots of docker.hosts" },
		{ "pool:\n  devices: 3\ntrial:\n  command: t.sh\n  launcher: mpi\n",
		  "'pool.maxDevices': must be set, at most 2, with trial.launcher: mpi on docker.hosts" },
		{ "pool:\n  devices: 3\n  maxDevices: 3\ntrial:\n  command: t.sh\n  launcher: mpi\n",
		  "c.yml:9:15: 'pool.maxDevices': must be at most 2 with trial.launcher: mpi" },
		{ "pool:\n  devices: 3\n  maxDevices: 2\ntrial:\n  command: t.sh\n  launcher: mpi\n",
		  NULL },
		{ "pool:\n  devices: 3\n", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = xstrfmt("experimentName: h\ntrainingServicePlatform: docker\n"
				     "docker:\n  hosts:\n    - {address: a, slots: 2}\n    - {address: b}\n%s%s",
				     cases[i][0], strstr(cases[i][0], "trial:") ? "" : "trial:\n  command: t.sh\n");
		put("c.yml", text);
		free(text);
		char *p = xstrfmt("%s/c.yml", tmpdir);
		cr_assert_eq(backend_config_load(p, &cfg), 0, "%s", util_last_error());
		free(p);
		cr_assert_eq(docker_hosts_parse(&cfg, &hs), 0);
		docker_hosts_release(&hs);
		int r = docker_check_config(&cfg);
		if (cases[i][1]) {
			cr_assert_eq(r, -1, "case %zu accepted", i);
			cr_assert(strstr(util_last_error(), cases[i][1]), "case %zu: %s", i,
				  util_last_error());
		} else {
			cr_assert_eq(r, 0, "case %zu: %s", i, util_last_error());
		}
		config_release(&cfg);
	}
}

/* docker_hosts.json: what a runner writes, a resumed one reads back (the
 * containers down hosts kept), and status prints. */
Test(docker_hosts, the_state_file_round_trips_what_down_hosts_kept)
{
	struct aah_config cfg;
	struct docker_hosts hs, again;
	cr_assert_eq(parse("  hosts:\n    - {address: a}\n    - {address: b, user: u, port: 2200}\n",
			   &cfg, &hs), 0);
	hs.h[1].down = 1;
	hs.h[1].since = 1790000000;
	snprintf(hs.h[1].reason, sizeof(hs.h[1].reason),
		 "ssh: connect to host b port 2200: Connection refused");
	strvec_push(&hs.h[1].kept, "0123abcd");
	cr_assert_eq(docker_hosts_save(&hs, tmpdir), 0, "%s", util_last_error());
	cr_assert_eq(docker_hosts_parse(&cfg, &again), 0);
	docker_hosts_load_kept(&again, tmpdir);
	cr_assert_eq(again.h[0].kept.n, 0);
	cr_assert_eq(again.h[1].kept.n, 1);
	cr_assert_str_eq(again.h[1].kept.v[0], "0123abcd");
	struct strbuf sb = STRBUF_INIT;
	docker_hosts_status(tmpdir, &sb);
	cr_assert(strstr(sb.buf, "docker hosts: 2, 1 down\n"), "%s", sb.buf);
	cr_assert(strstr(sb.buf, "Connection refused\n"), "%s", sb.buf);
	cr_assert(strstr(sb.buf, "\na                        1      up "), "%s", sb.buf);
	strbuf_release(&sb);
	docker_hosts_release(&again);
	docker_hosts_release(&hs);
	config_release(&cfg);
}

/* Docker's CLI quotes ssh's line when ssh fails before the CLI writes to
 * it; when the CLI's write fails first it says only "broken pipe". A host
 * that went down keeps the reason that named ssh's words (seen as a
 * flaky docker_hosts.bats, where the down host's reason became the pipe). */
Test(docker_hosts, a_host_down_keeps_ssh_s_words_over_the_cli_s_broken_pipe)
{
	struct aah_config cfg;
	struct docker_priv p = {0};
	cr_assert_eq(parse("  hosts: [{address: node1}, {address: node2}]\n", &cfg, &p.hosts), 0, "%s",
		     util_last_error());
	p.expdir = tmpdir;
	p.dc.host_timeout = 3600;
	struct docker_host *h = &p.hosts.h[1];
	const char *refused =
		"error during connect: Get \"http://docker.example.com/v1.24/version\": command "
		"[ssh -p 2222 -- node2 docker system dial-stdio] has exited with exit status 255, "
		"please make sure the URL is valid, and Docker 18.09 or later is installed on the "
		"remote host: stderr=ssh: connect to host node2 port 2222: Connection refused\n";
	const char *pipe_only =
		"error during connect: Get \"http://docker.example.com/v1.24/version\": "
		"write |1: broken pipe\n";
	cr_assert_eq(docker_fleet_failed(&p, h, refused), 0);
	cr_assert_str_eq(h->reason, "ssh: connect to host node2 port 2222: Connection refused");
	p.dc.host_timeout = 0;
	cr_assert_eq(docker_fleet_failed(&p, h, pipe_only), 1);
	cr_assert_str_eq(h->reason, "ssh: connect to host node2 port 2222: Connection refused");
	struct strbuf sb = STRBUF_INIT;
	docker_hosts_status(tmpdir, &sb);
	cr_assert(strstr(sb.buf, "Connection refused"), "%s", sb.buf);
	strbuf_release(&sb);
	cr_assert_eq(p.hosts.h[0].down, 0);
	docker_hosts_release(&p.hosts);
	config_release(&cfg);
}
