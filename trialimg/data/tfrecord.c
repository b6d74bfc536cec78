/* tfrecord.c: TFRecord framing and tf.Example decoding, by hand: a record
 * is uint64 length, uint32 masked CRC-32C of those 8 bytes, the data,
 * uint32 masked CRC-32C of the data (all little-endian). The data of an
 * ImageNet record is a tf.Example protobuf:
 *   Example  { Features features = 1; }
 *   Features { map<string, Feature> feature = 1; }  (entries: key = 1, value = 2)
 *   Feature  { oneof { BytesList bytes_list = 1; FloatList float_list = 2;
 *                      Int64List int64_list = 3; } }
 *   BytesList { repeated bytes value = 1; }
 *   Int64List { repeated int64 value = 1 [packed]; }  (packed or not)
 * Debian's protobuf-c is not installed here, and the two features needed
 * do not justify generated code: the wire format below is varints and
 * length-delimited fields, each length checked against its buffer. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trialimg/data/tfrecord.h"
#include "util.h"

/* ---- CRC-32C (reflected polynomial 0x82f63b78), slicing by 8 ------------ */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t tfrecord_crc32c(const void *data, size_t n)
{
	const uint8_t *p = data;
	uint32_t c = 0xffffffffu;
	pthread_once(&crc_once, crc_init);
	for (; n >= 8; n -= 8, p += 8) {
		uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				   (uint32_t)p[3] << 24);
		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^
		    crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
	}
	while (n--)
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
	return c ^ 0xffffffffu;
}

uint32_t tfrecord_masked_crc(const void *p, size_t n)
{
	uint32_t c = tfrecord_crc32c(p, n);
	return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* ---- records ---------------------------------------------------------------- */

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int bad_record(const char *path, long index, uint64_t offset, const char *what)
{
	return error("'%s': record %ld at byte %llu: %s", path, index, (unsigned long long)offset,
		     what);
}

/* Checks a record's 12-byte header against the bytes left in its file. */
static const char *check_header(const uint8_t *hdr, uint64_t left, uint64_t *len)
{
	if (tfrecord_masked_crc(hdr, 8) != le32(hdr + 8))
		return "the length's checksum does not match (a corrupt length field)";
	*len = le64(hdr);
	if (*len > left || left - *len < 4)
		return "the record runs past the end of the file (a truncated file?)";
	return NULL;
}

int tfrecord_open(struct tfrecord_reader *r, const char *path)
{
	struct stat st;
	memset(r, 0, sizeof(*r));
	if (!(r->f = fopen(path, "rb")))
		return error_errno("cannot open '%s'", path);
	if (fstat(fileno(r->f), &st)) {
		fclose(r->f);
		r->f = NULL;
		return error_errno("cannot stat '%s'", path);
	}
	r->size = (uint64_t)st.st_size;
	r->path = xstrdup(path);
	return 0;
}

int tfrecord_next(struct tfrecord_reader *r, const uint8_t **data, size_t *len,
		  uint64_t *data_offset)
{
	uint8_t hdr[12], foot[4];
	uint64_t n;
	size_t got = fread(hdr, 1, sizeof(hdr), r->f);
	if (got == 0 && feof(r->f))
		return 0;
	if (got < sizeof(hdr))
		return bad_record(r->path, r->index, r->offset,
				  ferror(r->f) ? strerror(errno) : "the file ends inside the record's header");
	const char *why = check_header(hdr, r->size - r->offset - sizeof(hdr), &n);
	if (why)
		return bad_record(r->path, r->index, r->offset, why);
	if (n > r->cap)
		r->buf = xrealloc(r->buf, r->cap = n + n / 4 + 64);
	if (fread(r->buf, 1, n, r->f) != n || fread(foot, 1, 4, r->f) != 4)
		return bad_record(r->path, r->index, r->offset,
				  ferror(r->f) ? strerror(errno) : "the file ends inside the record");
	if (tfrecord_masked_crc(r->buf, n) != le32(foot))
		return bad_record(r->path, r->index, r->offset,
				  "the data's checksum does not match (corrupt data)");
	*data = r->buf;
	*len = n;
	*data_offset = r->offset + sizeof(hdr);
	r->offset += sizeof(hdr) + n + 4;
	r->index++;
	return 1;
}

void tfrecord_close(struct tfrecord_reader *r)
{
	if (r->f)
		fclose(r->f);
	free(r->path);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

static int pread_all(int fd, void *buf, size_t n, uint64_t at)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k = pread(fd, (uint8_t *)buf + done, n - done, (off_t)(at + done));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	return 0;
}

int tfrecord_read_fd(int fd, const char *path, long index, uint64_t data_offset, size_t len,
		     uint8_t *buf)
{
	uint8_t hdr[12], foot[4];
	uint64_t at = data_offset - sizeof(hdr), n;
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) || pread_all(fd, hdr, sizeof(hdr), at))
		why = "cannot read the record's header (has the file changed since it was opened?)";
	else if (!(why = check_header(hdr, (uint64_t)st.st_size - data_offset, &n)) && n != len)
		why = "its length differs from the one read when the set was opened";
	else if (!why && (pread_all(fd, buf, len, data_offset) ||
			  pread_all(fd, foot, sizeof(foot), data_offset + len)))
		why = "cannot read the record (has the file changed since it was opened?)";
	else if (!why && tfrecord_masked_crc(buf, len) != le32(foot))
		why = "the data's checksum does not match (corrupt data)";
	return why ? bad_record(path, index, at, why) : 0;
}

int tfrecord_read_at(const char *path, long index, uint64_t data_offset, size_t len, uint8_t *buf)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return error_errno("cannot open '%s'", path);
	int rc = tfrecord_read_fd(fd, path, index, data_offset, len, buf);
	close(fd);
	return rc;
}

/* ---- protobuf wire format ----------------------------------------------------- */

struct pb {
	const uint8_t *p, *end;
};

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_BYTES = 2, PB_FIXED32 = 5 };

static int pb_varint(struct pb *b, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (b->p == b->end)
			return -1;
		uint8_t c = *b->p++;
		if (shift == 63 && c > 1)
			return -1; /* more than 64 bits */
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* One field: its number, its wire type, a varint's value (or a
 * length-delimited field's length) and a length-delimited field's bytes. */
struct pb_field {
	uint32_t num;
	int wire;
	uint64_t v;
	struct pb sub;
};

/* Reads the next field of b into *f. */
static const char *pb_field(struct pb *b, struct pb_field *f)
{
	uint64_t key, skip;
	if (pb_varint(b, &key))
		return "a field key is truncated or too long";
	if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
		return "a field number is out of range";
	f->num = (uint32_t)(key >> 3);
	f->wire = (int)(key & 7);
	switch (f->wire) {
	case PB_VARINT:
		return pb_varint(b, &f->v) ? "a varint is truncated or too long" : NULL;
	case PB_BYTES:
		if (pb_varint(b, &f->v))
			return "a length is truncated or too long";
		if (f->v > (uint64_t)(b->end - b->p))
			return "a length runs past the end of its message";
		f->sub.p = b->p;
		f->sub.end = b->p + f->v;
		b->p += f->v;
		return NULL;
	case PB_FIXED64:
	case PB_FIXED32:
		skip = f->wire == PB_FIXED64 ? 8 : 4;
		if (skip > (uint64_t)(b->end - b->p))
			return "a fixed-size field runs past the end of its message";
		b->p += skip;
		return NULL;
	default:
		return "a field has an unsupported wire type (groups are not used by tf.Example)";
	}
}

/* The one value of a BytesList (FixedLenFeature of shape []). */
static const char *bytes_one(struct pb b, struct pb *value)
{
	int count = 0;
	struct pb_field f;
	for (const char *why; b.p < b.end;) {
		if ((why = pb_field(&b, &f)))
			return why;
		if (f.num == 1 && f.wire != PB_BYTES)
			return "a BytesList value is not length-delimited";
		if (f.num == 1)
			*value = f.sub, count++;
	}
	return count == 1 ? NULL : "'image/encoded' does not hold exactly one value";
}

/* The one value of an Int64List, packed or not. */
static const char *int64_one(struct pb b, int64_t *value)
{
	int count = 0;
	struct pb_field f;
	for (const char *why; b.p < b.end;) {
		if ((why = pb_field(&b, &f)))
			return why;
		if (f.num != 1)
			continue;
		if (f.wire == PB_VARINT) {
			*value = (int64_t)f.v, count++;
		} else if (f.wire == PB_BYTES) {
			while (f.sub.p < f.sub.end) {
				if (pb_varint(&f.sub, &f.v))
					return "a packed int64 is truncated or too long";
				*value = (int64_t)f.v, count++;
			}
		} else {
			return "an Int64List value has the wrong wire type";
		}
	}
	return count == 1 ? NULL : "'image/class/label' does not hold exactly one value";
}

/* The Feature message of a map entry: which list it holds (1 bytes, 2
 * float, 3 int64; the last one set wins, as for a oneof) and its bytes. */
static const char *feature_kind(struct pb b, int *kind, struct pb *list)
{
	*kind = 0;
	struct pb_field f;
	for (const char *why; b.p < b.end;) {
		if ((why = pb_field(&b, &f)))
			return why;
		if (f.num >= 1 && f.num <= 3) {
			if (f.wire != PB_BYTES)
				return "a Feature's list is not length-delimited";
			*kind = (int)f.num, *list = f.sub;
		}
	}
	return NULL;
}

static int key_is(struct pb key, const char *name)
{
	size_t n = strlen(name);
	return (size_t)(key.end - key.p) == n && !memcmp(key.p, name, n);
}

/* One map entry of Features: keeps the value of the two keys wanted. */
static const char *entry(struct pb b, struct pb *jpeg, int *has_jpeg, struct pb *label,
			 int *has_label)
{
	struct pb key = {b.p, b.p}, value = {b.p, b.p};
	struct pb_field f;
	for (const char *why; b.p < b.end;) {
		if ((why = pb_field(&b, &f)))
			return why;
		if ((f.num == 1 || f.num == 2) && f.wire != PB_BYTES)
			return "a feature map entry's key or value is not length-delimited";
		if (f.num == 1)
			key = f.sub;
		else if (f.num == 2)
			value = f.sub;
	}
	int kind;
	struct pb list = value;
	if (key_is(key, "image/encoded") || key_is(key, "image/class/label")) {
		const char *why = feature_kind(value, &kind, &list);
		if (why)
			return why;
		if (key_is(key, "image/encoded")) {
			if (kind != 1)
				return "'image/encoded' is not a bytes_list";
			*jpeg = list, *has_jpeg = 1;
		} else {
			if (kind != 3)
				return "'image/class/label' is not an int64_list";
			*label = list, *has_label = 1;
		}
	}
	return NULL;
}

const char *tfrecord_example_parse(const uint8_t *buf, size_t len, struct tfrecord_example *ex)
{
	struct pb b = {buf, buf + len}, jpeg = {buf, buf}, label = {buf, buf};
	int has_jpeg = 0, has_label = 0;
	memset(ex, 0, sizeof(*ex));
	while (b.p < b.end) {
		struct pb_field f, e;
		const char *why = pb_field(&b, &f);
		if (why)
			return why;
		if (f.num != 1)
			continue;
		if (f.wire != PB_BYTES)
			return "the Example's features are not length-delimited";
		while (f.sub.p < f.sub.end) {
			if ((why = pb_field(&f.sub, &e)))
				return why;
			if (e.num == 1 && e.wire != PB_BYTES)
				return "a feature map entry is not length-delimited";
			if (e.num == 1 && (why = entry(e.sub, &jpeg, &has_jpeg, &label, &has_label)))
				return why;
		}
	}
	if (!has_jpeg)
		return "no 'image/encoded' feature (is this a tf.Example of an image?)";
	if (!has_label)
		return "no 'image/class/label' feature";
	struct pb value = {buf, buf};
	const char *why = bytes_one(jpeg, &value);
	if (why || (why = int64_one(label, &ex->label)))
		return why;
	ex->jpeg = value.p;
	ex->jpeg_len = (size_t)(value.end - value.p);
	return NULL;
}
