/* SPDX-License-Identifier: MIT */
/*
 * The scan cache: what the launch scan for autorun names (autorun.c) found
 * in a directory, kept under the directory's identity (device and inode) and
 * its status-change time (ctime). A directory unchanged since it was last
 * read then costs one statx at launch instead of an open, a read of every
 * entry and a close (on ext4 the read hashes every name and builds a tree of
 * them, about 7 us for a small directory). Records live in this process's
 * memory (ward mcp and ward serve resolve a policy per command) and, where
 * the CLI names a directory for them, in one file per scan start there
 * (ward run is a new process every time).
 *
 * DESIGN: why a record can be trusted.
 *
 * A record says: "the directory with device D and inode I, while its ctime
 * was C, held these names". The kernel sets a directory's ctime to its own
 * clock whenever an entry is created, removed or renamed in it; no system
 * call sets ctime to a chosen value (utimensat sets atime and mtime only),
 * and a sandboxed command cannot set the clock (settimeofday, clock_settime
 * and adjtimex are refused by ward's seccomp filter, and it has no
 * CAP_SYS_TIME). So a directory whose ctime is still C has not gained, lost
 * or renamed an entry since the record was made, provided no change after
 * the reading could have been given the same C. A change gets at least the
 * kernel's coarse clock at that moment (multigrain timestamps only make it
 * finer), truncated to the filesystem's granularity. A record is therefore
 * made only when C was already in the past when the directory was looked at:
 * C earlier than the coarse clock read before the statx (CLOCK_REALTIME_COARSE,
 * the clock the kernel stamps with), and a whole second earlier when C has
 * no nanoseconds (ext4 with small inodes keeps whole seconds). Every change
 * after the look then has a later ctime; a directory changed within the last
 * clock tick is simply read again next time. Only filesystems whose ctime is
 * kept by this kernel are trusted: ext4, xfs, btrfs and tmpfs; not network
 * filesystems (attributes can be stale), FUSE (the server says what ctime
 * is), overlayfs (its lower layers can change beneath it), and not a
 * directory on another filesystem than its scan start (a mount point inside
 * a workspace is read every time). A directory removed and another made
 * with the same inode number has the ctime of its making, later than any
 * record's.
 *
 * DESIGN: why a file of records can be trusted.
 *
 * The directory of the files is ward's own: $XDG_RUNTIME_DIR/ward (private,
 * and usually outside every writable root), else $XDG_CACHE_HOME/ward or
 * ~/.cache/ward. resolve.c keeps it read-only in every sandbox whose
 * writable roots hold it, as ward does for its rules and audit log. That
 * alone is not enough: in the Landlock fallback (no namespaces) nothing can
 * be made read-only inside a writable root, and the guard puts a protected
 * path back only after the command changed it, while another ward may be
 * reading. A forged record would make ward skip a directory (an existing
 * .vscode left writable, or a directory not watched, where a .vscode could
 * then be made). So no file is believed for where it is: each carries a
 * message authentication code (SipHash-2-4, basic/siphash.c) under a 128-bit
 * key that ward keeps in the kernel's user keyring of its user. No sandbox
 * can read or replace that key: keyctl, add_key and request_key are refused
 * by ward's seccomp filter in every sandbox, with namespaces or without. A
 * file whose code does not check out, or that is damaged anywhere, is
 * ignored whole; a command that deletes or spoils a file only makes the next
 * launch read directories again. An old authentic file put back is no
 * threat either: each of its records is still a true statement about the
 * state it names (above), and a changed directory no longer has that ctime.
 * Where the keyring cannot be used (Docker's default seccomp profile refuses
 * keyctl to the whole container) nothing is read from or written to disk.
 * What can read the key is what runs outside any sandbox as the same user
 * (danger-full-access, a command approved to run unsandboxed), which can
 * write the workspace directly anyway.
 *
 * Files are replaced whole (a temporary file renamed over the old one), so
 * concurrent ward processes never see half a file; the last writer wins.
 * Bounds: a record holds at most WARD_SCAN_CACHE_MAX_NAMES names
 * (WARD_SCAN_CACHE_MAX_LEN bytes), a file FILE_MAX_RECORDS records and
 * FILE_MAX bytes, the directory MAX_FILES files (the oldest goes), memory
 * MAX_RECORDS records and MAX_BYTES bytes of names (then it starts over).
 */
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/siphash.h"
#include "basic/util.h"
#include "policy/scan-cache.h"

#define MAX_RECORDS 16384
#define MAX_BYTES (8 << 20)
#define SCAN_MAX_BYTES (2 << 20) /* new records one scan adds */
#define FILE_MAX (1 << 20)
#define FILE_MAX_RECORDS 4096
#define MAX_FILES 64
#define MIN_FILE_DIRS 8 /* a start with fewer directories is read, not kept in a file */
#define MAX_LOADED 64
#define KEY_DESC "ward:scan-cache"
/* Possessor: everything; the user: view, read, search. Never another user. */
#define KEY_PERM 0x3f0b0000

static const char magic[8] = {'W', 'A', 'R', 'D', 'S', 'C', 'A', 'N'};
/*
 * What a listing keeps depends on autorun.c's table (may_matter(): the later
 * components of its entries): a file made under another table could lack a
 * name that matters now, so every change of the table's later components
 * takes a new version (2: more of the home's places; 3: a symlink's flag is
 * 2, where it was 0 like a file's: the scan follows links where names go on).
 */
#define VERSION 3

struct rec {
	uint64_t dev, ino;
	int64_t sec;
	uint32_t nsec;
	uint32_t entries, n, len;
	char names[];
};

/* On disk: a head, then records, each a rec head and its names padded to 8 bytes. */
struct file_head {
	char magic[8];
	uint32_t version, count;
	uint64_t dev, ino;
	uint64_t mac; /* SipHash-2-4 of the whole file with this field zero */
};
#define REC_HEAD offsetof(struct rec, names)
_Static_assert(sizeof(struct file_head) == 40 && REC_HEAD == 40, "the file layout");

struct id {
	uint64_t dev, ino;
};

struct start {
	struct id id;
	struct statx stx; /* of the start, before it is read */
	bool have_stx;
	bool local; /* its filesystem keeps ctime honestly (see above) */
	bool had_file;
	bool worth; /* records of it may be here: a statx before each directory is worth it */
	struct id *used; /* the directories of this scan's records, in the order looked into */
	size_t n_used, cap_used;
	size_t dirty; /* records this scan made */
	size_t n_dirs; /* directories this scan looked into, kept or not */
};

struct ward__scan_cache {
	pthread_mutex_t lock;
	char *dir;
	int dir_fd; /* -1 not opened yet, -2 unusable */
	int key_state; /* 0 not looked for yet, 1 key, -1 none */
	uint8_t key[WARD_SIPHASH_KEY_SIZE];
	struct rec **slots; /* open addressing on (dev, ino) */
	size_t cap, count, bytes;
	struct {
		struct id id;
		bool had_file;
	} loaded[MAX_LOADED];
	size_t n_loaded;
	/* The scan under way. */
	struct timespec now;
	struct start *starts;
	size_t n_starts;
	size_t scan_bytes;
};

static struct ward__scan_cache cache = {.lock = PTHREAD_MUTEX_INITIALIZER, .dir_fd = -1};

/* ------------------------------------------------------------ the table */

static size_t slot_of(uint64_t dev, uint64_t ino, size_t cap)
{
	uint64_t h = (ino ^ (dev * UINT64_C(0x9e3779b97f4a7c15))) * UINT64_C(0xff51afd7ed558ccd);

	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static struct rec **find(struct ward__scan_cache *c, uint64_t dev, uint64_t ino)
{
	size_t i;

	if (!c->cap)
		return NULL;
	for (i = slot_of(dev, ino, c->cap);; i = (i + 1) & (c->cap - 1))
		if (!c->slots[i] || (c->slots[i]->dev == dev && c->slots[i]->ino == ino))
			return &c->slots[i];
}

static void clear(struct ward__scan_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->slots[i]);
	free(c->slots);
	c->slots = NULL;
	c->cap = c->count = c->bytes = 0;
}

static bool grow(struct ward__scan_cache *c)
{
	size_t cap = c->cap ? c->cap * 2 : 256;
	struct rec **old = c->slots, **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return false;
	c->slots = slots;
	for (size_t i = 0; i < c->cap; i++) {
		size_t j;

		if (!old[i])
			continue;
		for (j = slot_of(old[i]->dev, old[i]->ino, cap); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = old[i];
	}
	c->cap = cap;
	free(old);
	return true;
}

/* Takes r (or frees it): replaces the record of the same directory unless that one is newer. */
static bool insert(struct ward__scan_cache *c, struct rec *r)
{
	struct rec **slot;

	if (c->count + 1 > c->cap / 2 && (c->count >= MAX_RECORDS || !grow(c))) {
		free(r);
		return false;
	}
	slot = find(c, r->dev, r->ino);
	if ((*slot &&
	     ((*slot)->sec > r->sec || ((*slot)->sec == r->sec && (*slot)->nsec > r->nsec))) ||
	    c->bytes - (*slot ? (*slot)->len : 0) + r->len > MAX_BYTES) {
		free(r);
		return false;
	}
	if (*slot) {
		c->bytes -= (*slot)->len;
		free(*slot);
		c->count--;
	}
	*slot = r;
	c->count++;
	c->bytes += r->len;
	return true;
}

void ward__scan_cache_clear(void)
{
	pthread_mutex_lock(&cache.lock);
	clear(&cache);
	cache.n_loaded = 0;
	pthread_mutex_unlock(&cache.lock);
}

/* ------------------------------------------------------------ the key and the directory */

/*
 * The key of this user's files, from the kernel's user keyring, made there
 * (random) the first time. When two ward processes make it at once, the
 * second's replaces the first's: a file written under the first is then
 * ignored once and written again.
 */
static bool have_key(struct ward__scan_cache *c)
{
	long id;

	if (c->key_state)
		return c->key_state > 0;
	c->key_state = -1;
	id = syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, "user", KEY_DESC, 0);
	if (id < 0 && errno == ENOKEY) {
		uint8_t fresh[WARD_SIPHASH_KEY_SIZE];

		if (getrandom(fresh, sizeof(fresh), 0) != (ssize_t)sizeof(fresh))
			return false;
		id = syscall(SYS_add_key, "user", KEY_DESC, fresh, sizeof(fresh),
			     KEY_SPEC_USER_KEYRING);
		explicit_bzero(fresh, sizeof(fresh));
		if (id >= 0)
			(void)syscall(SYS_keyctl, KEYCTL_SETPERM, id, KEY_PERM);
	}
	if (id < 0 ||
	    syscall(SYS_keyctl, KEYCTL_READ, id, c->key, sizeof(c->key)) != (long)sizeof(c->key))
		return false;
	c->key_state = 1;
	return true;
}

/*
 * The directory of the files, open, when it is ward's user's own and nobody
 * else may write it; made (0700) only to save a file into (make), so that a
 * launch that has nothing to save costs nothing here.
 */
static int dir_fd(struct ward__scan_cache *c, bool make)
{
	struct stat st;
	int fd;

	if (!c->dir)
		return -2;
	if (c->dir_fd >= 0 || c->dir_fd == -2)
		return c->dir_fd;
	fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && make && ward__mkdir_parents(c->dir, 0700) >= 0)
		fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* Missing: made when there is something to save. */
		if (errno != ENOENT)
			c->dir_fd = -2;
		return -2;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		c->dir_fd = -2;
		return -2;
	}
	c->dir_fd = fd;
	return fd;
}

int ward__scan_cache_set_dir(const char *dir)
{
	char *d;

	if (!dir || dir[0] != '/')
		return -EINVAL;
	d = strdup(dir);
	if (!d)
		return -ENOMEM;
	pthread_mutex_lock(&cache.lock);
	free(cache.dir);
	cache.dir = d;
	if (cache.dir_fd >= 0)
		close(cache.dir_fd);
	cache.dir_fd = -1;
	pthread_mutex_unlock(&cache.lock);
	return 0;
}

const char *ward__scan_cache_dir(void)
{
	return cache.dir;
}

int ward__scan_cache_default_dir(char **ret_dir)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	_cleanup_free_ char *home = NULL;
	struct stat st;
	char *d;
	int r;

	if (x && x[0] == '/' && stat(x, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid() && !(st.st_mode & 077)) {
		d = ward__path_join(x, "ward");
	} else if ((x = getenv("XDG_CACHE_HOME")) && x[0] == '/') {
		d = ward__path_join(x, "ward");
	} else {
		r = ward__home_dir(&home);
		if (r < 0)
			return r;
		d = ward__path_join(home, ".cache/ward");
	}
	if (!d)
		return -ENOMEM;
	*ret_dir = d;
	return 0;
}

/* ------------------------------------------------------------ files */

static void file_name(const struct id *id, char *buf, size_t size)
{
	snprintf(buf, size, "scan-%016llx-%016llx", (unsigned long long)id->dev,
		 (unsigned long long)id->ino);
}

/* A listing's names, checked: n of them, each a flag, a name of 1-255 bytes without '/', a NUL. */
static bool names_valid(const char *p, uint32_t n, uint32_t len)
{
	const char *end = p + len;

	for (uint32_t i = 0; i < n; i++) {
		const char *nul;
		size_t l;

		if (end - p < 3 || (unsigned char)p[0] > 2)
			return false;
		p++;
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			return false;
		l = (size_t)(nul - p);
		if (l == 0 || l > 255 || memchr(p, '/', l) || strcmp(p, ".") == 0 ||
		    strcmp(p, "..") == 0)
			return false;
		p = nul + 1;
	}
	return p == end;
}

/* The file of start s, when its code checks out: its records go to the table. */
static void load(struct ward__scan_cache *c, struct start *s)
{
	char name[64];
	_cleanup_free_ char *buf = NULL, *path = NULL;
	_cleanup_close_ int fd = -1;
	struct file_head h;
	struct stat st;
	uint64_t mac;
	size_t off;
	ssize_t n;

	/* By its path: a small start has no file, and that costs one failed open. */
	file_name(&s->id, name, sizeof(name));
	path = ward__path_join(c->dir, name);
	if (!path)
		return;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	s->had_file = true;
	/* The key is looked for (a keyring search) only once there is a file to check. */
	if (!have_key(c))
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(h) ||
	    st.st_size > FILE_MAX)
		return;
	buf = malloc((size_t)st.st_size);
	if (!buf)
		return;
	n = ward__read_full(fd, buf, (size_t)st.st_size);
	if (n != st.st_size)
		return;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, magic, sizeof(magic)) != 0 || h.version != VERSION ||
	    h.count > FILE_MAX_RECORDS || h.dev != s->id.dev || h.ino != s->id.ino)
		return;
	mac = h.mac;
	memset(buf + offsetof(struct file_head, mac), 0, sizeof(h.mac));
	if (ward__siphash24(c->key, buf, (size_t)n) != mac)
		return;
	/* Checked whole before a record is kept: a damaged file changes nothing. */
	off = sizeof(h);
	for (uint32_t i = 0; i < h.count; i++) {
		struct rec r;

		if ((size_t)n - off < REC_HEAD)
			return;
		memcpy(&r, buf + off, REC_HEAD);
		if (r.len > WARD_SCAN_CACHE_MAX_LEN || r.n > WARD_SCAN_CACHE_MAX_NAMES ||
		    (size_t)n - off - REC_HEAD < r.len || r.nsec >= 1000000000 ||
		    !names_valid(buf + off + REC_HEAD, r.n, r.len))
			return;
		off += REC_HEAD + ((r.len + 7) & ~7u);
		if (off > (size_t)n)
			return;
	}
	if (off != (size_t)n)
		return;
	off = sizeof(h);
	for (uint32_t i = 0; i < h.count; i++) {
		struct rec head, *r;

		memcpy(&head, buf + off, REC_HEAD);
		r = malloc(REC_HEAD + head.len);
		if (!r)
			return;
		memcpy(r, buf + off, REC_HEAD + head.len);
		s->worth |= insert(c, r);
		off += REC_HEAD + ((head.len + 7) & ~7u);
	}
}

/*
 * Keeps at most MAX_FILES files: the one changed longest ago goes (a stale
 * temporary one too). Only the first 1024 entries are looked at: a
 * directory stuffed with more is not ward's doing, and must not cost a
 * launch more than that.
 */
static void make_room(int dfd)
{
	_cleanup_close_ int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[8192] __attribute__((aligned(8)));
	char oldest[256] = "";
	struct timespec t = {0};
	size_t count = 0, seen = 0;

	if (fd < 0)
		return;
	while (seen < 1024) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));

		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			struct stat st;

			off += d->reclen;
			seen++;
			if (strncmp(d->name, "scan-", 5) != 0 ||
			    fstatat(dfd, d->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			count++;
			if (!oldest[0] || st.st_mtim.tv_sec < t.tv_sec ||
			    (st.st_mtim.tv_sec == t.tv_sec && st.st_mtim.tv_nsec < t.tv_nsec)) {
				snprintf(oldest, sizeof(oldest), "%s", d->name);
				t = st.st_mtim;
			}
		}
	}
	if (count >= MAX_FILES && oldest[0])
		(void)unlinkat(dfd, oldest, 0);
}

/* Writes the file of start s: this scan's records of it, shallowest first, up to the bounds. */
static void save(struct ward__scan_cache *c, struct start *s, int dfd)
{
	char name[64], tmp[96];
	_cleanup_free_ char *buf = malloc(FILE_MAX);
	struct file_head h = {.version = VERSION, .dev = s->id.dev, .ino = s->id.ino};
	size_t off = sizeof(h);
	int fd, r;

	if (!buf)
		return;
	memcpy(h.magic, magic, sizeof(magic));
	for (size_t i = 0; i < s->n_used && h.count < FILE_MAX_RECORDS; i++) {
		struct rec **slot = find(c, s->used[i].dev, s->used[i].ino);
		size_t size;

		if (!slot || !*slot)
			continue;
		size = REC_HEAD + (((*slot)->len + 7) & ~7u);
		if (off + size > FILE_MAX)
			break;
		memcpy(buf + off, *slot, REC_HEAD + (*slot)->len);
		memset(buf + off + REC_HEAD + (*slot)->len, 0, size - REC_HEAD - (*slot)->len);
		off += size;
		h.count++;
	}
	memcpy(buf, &h, sizeof(h));
	h.mac = ward__siphash24(c->key, buf, off);
	memcpy(buf + offsetof(struct file_head, mac), &h.mac, sizeof(h.mac));
	if (!s->had_file)
		make_room(dfd);
	file_name(&s->id, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", name, (long)getpid());
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	r = ward__write_all(fd, buf, off);
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	if (r < 0 || renameat(dfd, tmp, dfd, name) < 0) {
		(void)unlinkat(dfd, tmp, 0);
		return;
	}
	s->had_file = true;
}

/* ------------------------------------------------------------ a scan */

struct ward__scan_cache *ward__scan_cache_begin(size_t n_starts)
{
	struct ward__scan_cache *c = &cache;

	pthread_mutex_lock(&c->lock);
	/* A server's memory is bounded: past three quarters of it, it starts over. */
	if (c->count > MAX_RECORDS / 4 * 3 || c->bytes > MAX_BYTES / 4 * 3) {
		clear(c);
		c->n_loaded = 0;
	}
	c->starts = calloc(n_starts, sizeof(*c->starts));
	if (!c->starts) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	c->n_starts = n_starts;
	c->scan_bytes = 0;
	clock_gettime(CLOCK_REALTIME_COARSE, &c->now);
	return c;
}

static bool honest_fs(long type)
{
	switch ((unsigned long)type) {
	case EXT4_SUPER_MAGIC: /* ext2 and ext3 too */
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
		return true;
	default:
		return false;
	}
}

void ward__scan_cache_start(struct ward__scan_cache *c, size_t i, int fd)
{
	struct start *s = &c->starts[i];
	struct statfs sf;
	size_t k;

	if (fd < 0 ||
	    statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO | STATX_CTIME, &s->stx) < 0 ||
	    fstatfs(fd, &sf) < 0)
		return;
	s->have_stx = true;
	s->id = (struct id){makedev(s->stx.stx_dev_major, s->stx.stx_dev_minor), s->stx.stx_ino};
	s->local = honest_fs(sf.f_type);
	if (!s->local)
		return;
	/* Seen before by this process (a server): its records are in memory, its file read. */
	for (k = 0; k < c->n_loaded; k++)
		if (c->loaded[k].id.dev == s->id.dev && c->loaded[k].id.ino == s->id.ino) {
			s->had_file = c->loaded[k].had_file;
			s->worth = true;
			return;
		}
	if (c->dir)
		load(c, s);
	if (c->n_loaded == MAX_LOADED)
		c->n_loaded = 0;
	c->loaded[c->n_loaded].id = s->id;
	c->loaded[c->n_loaded++].had_file = s->had_file;
}

const struct statx *ward__scan_cache_start_stat(const struct ward__scan_cache *c, size_t i)
{
	return c && c->starts[i].have_stx ? &c->starts[i].stx : NULL;
}

bool ward__scan_cache_worth(const struct ward__scan_cache *c, size_t i)
{
	return c && c->starts[i].worth;
}

static bool same_fs(const struct start *s, const struct statx *dir)
{
	return s->local && makedev(dir->stx_dev_major, dir->stx_dev_minor) == s->id.dev;
}

bool ward__scan_cache_local(const struct ward__scan_cache *c, size_t i, const struct statx *dir)
{
	return c && same_fs(&c->starts[i], dir);
}

static void used(struct start *s, const struct statx *dir)
{
	if (s->n_used == s->cap_used) {
		size_t cap = s->cap_used ? s->cap_used * 2 : 64;
		struct id *n = reallocarray(s->used, cap, sizeof(*n));

		if (!n)
			return;
		s->used = n;
		s->cap_used = cap;
	}
	s->used[s->n_used++] = (struct id){s->id.dev, dir->stx_ino};
}

bool ward__scan_cache_get(struct ward__scan_cache *c, size_t i, const struct statx *dir,
			  struct ward__scan_listing *ret)
{
	struct start *s;
	struct rec **slot;

	if (!c)
		return false;
	s = &c->starts[i];
	if (!same_fs(s, dir))
		return false;
	slot = find(c, s->id.dev, dir->stx_ino);
	if (!slot || !*slot || (*slot)->sec != dir->stx_ctime.tv_sec ||
	    (*slot)->nsec != dir->stx_ctime.tv_nsec)
		return false;
	used(s, dir);
	s->n_dirs++;
	*ret = (struct ward__scan_listing){.entries = (*slot)->entries,
					   .n = (*slot)->n,
					   .len = (*slot)->len,
					   .names = (*slot)->names};
	return true;
}

/* Whether ctime t was in the past when the scan began (see the DESIGN note). */
static bool settled(const struct statx_timestamp *t, const struct timespec *now)
{
	int64_t sec = t->tv_sec + (t->tv_nsec ? 0 : 1);

	return sec < now->tv_sec || (sec == now->tv_sec && (long)t->tv_nsec < now->tv_nsec);
}

void ward__scan_cache_put(struct ward__scan_cache *c, size_t i, const struct statx *dir,
			  const struct ward__scan_listing *l)
{
	struct start *s;
	struct rec *r;

	if (!c)
		return;
	s = &c->starts[i];
	s->n_dirs++;
	if (!same_fs(s, dir) || !settled(&dir->stx_ctime, &c->now) ||
	    l->n > WARD_SCAN_CACHE_MAX_NAMES || l->len > WARD_SCAN_CACHE_MAX_LEN ||
	    c->scan_bytes + l->len > SCAN_MAX_BYTES)
		return;
	r = malloc(REC_HEAD + l->len);
	if (!r)
		return;
	*r = (struct rec){.dev = s->id.dev,
			  .ino = dir->stx_ino,
			  .sec = dir->stx_ctime.tv_sec,
			  .nsec = dir->stx_ctime.tv_nsec,
			  .entries = l->entries,
			  .n = l->n,
			  .len = l->len};
	memcpy(r->names, l->names, l->len);
	if (!insert(c, r))
		return;
	c->scan_bytes += l->len;
	used(s, dir);
	s->dirty++;
}

void ward__scan_cache_end(struct ward__scan_cache *c)
{
	int dfd;

	if (!c)
		return;
	for (size_t i = 0; i < c->n_starts; i++) {
		struct start *s = &c->starts[i];

		/*
		 * A file is rewritten whole: not for a directory or two that
		 * changed (an agent's working directory changes at every
		 * command; reading it again is cheaper than the file), but for
		 * a new start or a sizeable change.
		 */
		if (s->local && s->had_file && s->n_dirs < MIN_FILE_DIRS && s->n_dirs > 0 &&
		    (dfd = dir_fd(c, false)) >= 0) {
			/* Grown small: read every time, as a small start is. */
			char name[64];

			file_name(&s->id, name, sizeof(name));
			(void)unlinkat(dfd, name, 0);
			s->had_file = false;
		} else if (s->local && s->dirty > 0 && s->n_dirs >= MIN_FILE_DIRS &&
			   (!s->had_file || s->dirty >= 4 || s->dirty * 16 >= s->n_used) &&
			   (dfd = dir_fd(c, true)) >= 0 && have_key(c)) {
			save(c, s, dfd);
			for (size_t k = 0; k < c->n_loaded; k++)
				if (c->loaded[k].id.dev == s->id.dev &&
				    c->loaded[k].id.ino == s->id.ino)
					c->loaded[k].had_file = s->had_file;
		}
		free(s->used);
	}
	free(c->starts);
	c->starts = NULL;
	c->n_starts = 0;
	pthread_mutex_unlock(&c->lock);
}
