/*
 * A minimal stand-in for libfaketime, for processes libfaketime 0.9.10 cannot start: preloaded
 * (LD_PRELOAD), it moves CLOCK_REALTIME (clock_gettime, gettimeofday, time) of the process by an
 * offset in milliseconds read from the file named by CLOCKSHIFT_FILE ("+60000", "-3600000"),
 * re-read on every call (three system calls: a test server can afford them, and a jump is seen by
 * the very next clock read), so replacing the file jumps the clock. Every other clock
 * (CLOCK_MONOTONIC and friends) stays real.
 *
 * Why not libfaketime: Debian's redis-server is linked with the system jemalloc. libfaketime
 * initialises lazily, on the first call of any function it wraps, and its initialisation looks up
 * symbols glibc 2.36 no longer exports (__ftime, __xstat, ...); each failed dlsym allocates its
 * error message. The first allocation starts jemalloc, whose start-up calls clock_gettime and
 * pthread_cond_init — both wrapped, so libfaketime initialises again inside jemalloc's start-up,
 * allocates again, and deadlocks on jemalloc's (non-recursive) init lock. No libfaketime setting
 * helps: the recursion happens before it reads its environment.
 *
 * So this file never allocates, never calls dlsym and uses raw system calls only: safe to run
 * inside the allocator's own start-up.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long offset_ns;

static long long offset(void) {
  const char *path = getenv("CLOCKSHIFT_FILE");
  if (!path) return 0;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return __atomic_load_n(&offset_ns, __ATOMIC_RELAXED);
  char buf[32];
  long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
  syscall(SYS_close, fd);
  if (n > 0) {
    buf[n] = 0;
    long long ms = 0;
    int negative = 0, i = 0, digits = 0;
    if (buf[0] == '-' || buf[0] == '+') negative = buf[i++] == '-';
    for (; buf[i] >= '0' && buf[i] <= '9'; i++, digits++) ms = ms * 10 + (buf[i] - '0');
    // Unreadable or empty: keep the last offset.
    if (digits) __atomic_store_n(&offset_ns, (negative ? -ms : ms) * 1000000LL, __ATOMIC_RELAXED);
  }
  return __atomic_load_n(&offset_ns, __ATOMIC_RELAXED);
}

int clock_gettime(clockid_t id, struct timespec *tp) {
  if (syscall(SYS_clock_gettime, id, tp) != 0) return -1;
  if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) {
    long long t = (long long)tp->tv_sec * 1000000000LL + tp->tv_nsec + offset();
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
