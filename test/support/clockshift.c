/*
 * A minimal stand-in for libfaketime, for processes libfaketime 0.9.10 cannot start: preloaded
 * (LD_PRELOAD), it moves CLOCK_REALTIME (clock_gettime, gettimeofday, time) of the process as the
 * file named by CLOCKSHIFT_FILE says, re-read on every call (three system calls: a test process can
 * afford them, and a change is seen by the very next clock read), so replacing the file moves the
 * clock. Every other clock (CLOCK_MONOTONIC and friends) stays real.
 *
 * The file holds up to three integers: "OFFSET_MS [RATE_PERMILLE ANCHOR_MS]". The clock reads
 *
 *   real + OFFSET + (real - ANCHOR) * (RATE - 1000) / 1000
 *
 * where real is the true CLOCK_REALTIME and ANCHOR a true realtime instant in ms: from the anchor on
 * the clock runs at RATE/1000 of real time (1500: one and a half times as fast; 500: half as fast).
 * "+60000" is a plain jump (rate 1000); "+0 1500 1795700000000" runs fast from that instant. The
 * test that writes the file chooses OFFSET so that a rate change does not jump the clock.
 *
 * Why not libfaketime: Debian's redis-server is linked with the system jemalloc. libfaketime
 * initialises lazily, on the first call of any function it wraps, and its initialisation looks up
 * symbols glibc 2.36 no longer exports (__ftime, __xstat, ...); each failed dlsym allocates its
 * error message. The first allocation starts jemalloc, whose start-up calls clock_gettime and
 * pthread_cond_init — both wrapped, so libfaketime initialises again inside jemalloc's start-up,
 * allocates again, and deadlocks on jemalloc's (non-recursive) init lock. No libfaketime setting
 * helps: the recursion happens before it reads its environment.
 *
 * So this file never allocates, never calls dlsym, parses without the C library's number parsers and
 * uses raw system calls only: safe to run inside the allocator's own start-up.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct shift {
  long long offset_ns;
  long long rate; /* per mille */
  long long anchor_ns;
};

/* The last shift read whole: used while the file is missing or being replaced. Each field is
   atomic on its own; a reader that races a change may mix two shifts for one call, which only a
   failed read (not a normal one) can observe. */
static long long last_offset_ns, last_rate = 1000, last_anchor_ns;

/* Reads a signed decimal at *i, skipping leading blanks, into *out if it found digits (returned). */
static int number(const char *buf, int *i, long long *out) {
  while (buf[*i] == ' ' || buf[*i] == '\t') (*i)++;
  int negative = 0, digits = 0;
  if (buf[*i] == '-' || buf[*i] == '+') negative = buf[(*i)++] == '-';
  long long n = 0;
  for (; buf[*i] >= '0' && buf[*i] <= '9'; (*i)++, digits++) n = n * 10 + (buf[*i] - '0');
  if (digits) *out = negative ? -n : n;
  return digits > 0;
}

static struct shift current(void) {
  struct shift s = {
    __atomic_load_n(&last_offset_ns, __ATOMIC_RELAXED),
    __atomic_load_n(&last_rate, __ATOMIC_RELAXED),
    __atomic_load_n(&last_anchor_ns, __ATOMIC_RELAXED),
  };
  const char *path = getenv("CLOCKSHIFT_FILE");
  if (!path) return (struct shift){0, 1000, 0};
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[96];
  long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
  syscall(SYS_close, fd);
  if (n <= 0) return s;
  buf[n] = 0;
  int i = 0;
  long long ms, rate = 1000, anchor_ms = 0;
  // Unreadable or empty: keep the last shift.
  if (!number(buf, &i, &ms)) return s;
  if (number(buf, &i, &rate) && !number(buf, &i, &anchor_ms)) rate = 1000;
  s = (struct shift){ms * 1000000LL, rate, anchor_ms * 1000000LL};
  __atomic_store_n(&last_offset_ns, s.offset_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&last_rate, s.rate, __ATOMIC_RELAXED);
  __atomic_store_n(&last_anchor_ns, s.anchor_ns, __ATOMIC_RELAXED);
  return s;
}

int clock_gettime(clockid_t id, struct timespec *tp) {
  if (syscall(SYS_clock_gettime, id, tp) != 0) return -1;
  if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) {
    struct shift s = current();
    long long real = (long long)tp->tv_sec * 1000000000LL + tp->tv_nsec;
    long long t = real + s.offset_ns;
    // (real - anchor) * (rate - 1000) / 1000 without overflow for runs up to years: split in seconds and the rest
    if (s.rate != 1000) {
      long long since = real - s.anchor_ns;
      t += (since / 1000000000LL) * (s.rate - 1000) * 1000000LL + (since % 1000000000LL) * (s.rate - 1000) / 1000;
    }
    tp->tv_sec = t / 1000000000LL;
    tp->tv_nsec = t % 1000000000LL;
  }
  return 0;
}

/* glibc declares tv non-null. */
int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  (void)tz;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
