/*
 * dcm-run: the wrapper every exec run starts under, in C (issue 31). It does what the sh wrapper
 * of src/drivers/exec/wrapper.ts does, in one process beside the command instead of two (the sh
 * and its `tee`), so that a run costs the command, this small program, and nothing else:
 *
 *   dcm-run BASE UMASK FILE ARGS...
 *
 * 1. It takes the run: it creates BASE.run exclusively, naming $DCM_RUN_ID, or exits 75 without
 *    running the command when a later dcm has already taken the run for nobody.
 * 2. It starts the command (FILE, found on PATH as a shell would, with ARGS) under the umask UMASK
 *    (octal), stdout on its own stdout (the run's log) and stderr on a pipe it reads.
 * 3. It copies what comes down that pipe, as it comes, to its stdout (the log, so the log keeps
 *    stdout and stderr in the order written) and to BASE.err (appended: its last line is a failed
 *    run's reason; made on the first byte, so a run that writes no stderr has no .err). It waits
 *    for the command alone: a background process that keeps stderr open does not hold the run's
 *    end back (what is in the pipe when the command exits is copied, the rest is the leftovers',
 *    which dcm cleans up).
 * 4. It writes `CODE RUN_ID` to BASE.status as its last act and exits with CODE: the command's
 *    exit code, or 128 + the signal that ended it, as sh says it. `CODE RUN_ID alone` says that
 *    nothing of the run was left when the command ended (below): dcm then has no leftovers to
 *    look for in /proc.
 *
 * It is the subreaper of the run (Linux's PR_SET_CHILD_SUBREAPER): a process the command leaves
 * behind (`cmd &`, a double fork, `setsid`) is made its child when its own parent ends, instead of
 * process 1's. So once the command has ended, "no child left" means nothing of the run lives: a
 * process of the run's group or session, or one carrying its DCM_RUN_ID, descends from the
 * command. It reaps every child as it ends, so that what the command leaves does not pile up as
 * zombies while the run goes on. Where a child is left, or the kernel refused the subreaper, the
 * status says nothing more and dcm looks for the run's processes by their tag, as for the sh
 * wrapper.
 *
 * A status is written only by a dcm-run that saw its command end: one killed first (a timeout's
 * SIGTERM to the run's group) writes none, as the sh wrapper does; signals keep their default
 * action here, so it dies with its group. It starts under umask 077 (the launcher's), so the files
 * it creates are private, as the log is.
 *
 * The launcher uses it when it was built (`npm ci` builds it: native/build.mjs), and the sh
 * wrapper when it was not: the two write the same files with the same meaning.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int wake[2] = {-1, -1};

static void on_child(int sig) {
  (void)sig;
  int saved = errno;
  /* The pipe is non-blocking: a full one already says "look again". */
  ssize_t ignored = write(wake[1], "c", 1);
  (void)ignored;
  errno = saved;
}

/*
 * Every child that has ended, reaped (the command's leftovers, made this one's children as their
 * parents end); 1 once the command itself was, its status in *status.
 */
static int reap(pid_t command, int *status) {
  int got = 0, st;
  pid_t p;
  while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
    if (p == command) {
      *status = st;
      got = 1;
    }
  }
  return got;
}

/* All of buf to fd, or as much as it takes (a full disk drops the rest, as tee's own error would). */
static void put(int fd, const char *buf, size_t n) {
  while (n > 0 && fd >= 0) {
    ssize_t k = write(fd, buf, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return;
    }
    buf += k;
    n -= (size_t)k;
  }
}

static char *with_suffix(const char *base, const char *suffix) {
  size_t a = strlen(base), b = strlen(suffix);
  char *s = malloc(a + b + 1);
  if (!s) exit(70);
  memcpy(s, base, a);
  memcpy(s + a, suffix, b + 1);
  return s;
}

/* BASE.err, opened when the first byte of stderr comes: a run that writes none opens no file for it. */
static const char *err_name;
static int err_fd = -2;

/* Bytes of the command's stderr: to the log (stdout), then to BASE.err. */
static void copy_out(const char *buf, size_t n) {
  put(1, buf, n);
  if (err_fd == -2) err_fd = open(err_name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  put(err_fd, buf, n);
}

/* One read of the pipe, copied; 0 once the pipe has ended (or failed), 1 while it goes on. */
static int copy_once(int rd) {
  char buf[65536];
  ssize_t k = read(rd, buf, sizeof buf);
  if (k > 0) {
    copy_out(buf, (size_t)k);
    return 1;
  }
  return k < 0 && (errno == EINTR || errno == EAGAIN);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: dcm-run BASE UMASK FILE [ARGS...]\n");
    return 2;
  }
  const char *base = argv[1];
  mode_t user_umask = (mode_t)strtol(argv[2], NULL, 8);
  const char *run_id = getenv("DCM_RUN_ID");
  if (!run_id) run_id = "";

  /* 1. Take the run, or leave it to whoever took it first. */
  char *taken = with_suffix(base, ".run");
  int fd = open(taken, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return 75;
  dprintf(fd, "%s\n", run_id);
  close(fd);

  /* 2. The command, its stderr on a pipe (or on the log, where no pipe can be had). */
  int pipefd[2] = {-1, -1};
  int piped = pipe2(pipefd, O_CLOEXEC) == 0;
  if (piped && pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(pipefd[0]);
    close(pipefd[1]);
    piped = 0;
  }
  if (piped) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_child;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
  }
#ifdef PR_SET_CHILD_SUBREAPER
  int subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
#else
  int subreaper = 0; /* no subreaper: the status never says `alone` */
#endif
  pid_t child = fork();
  if (child < 0) {
    perror("dcm-run: fork");
    return 71;
  }
  if (child == 0) {
    umask(user_umask);
    if (piped) {
      dup2(pipefd[1], 2);
    } else {
      dup2(1, 2);
    }
    /* exec puts SIGCHLD's handler back to the default: the command gets none of this one. */
    execvp(argv[3], argv + 3);
    int e = errno;
    dprintf(2, "dcm-run: %s: %s\n", argv[3], e == ENOENT ? "not found" : strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }

  /* 3. Copy stderr as it comes until the command has ended. */
  int status = 0, reaped = 0;
  if (piped) {
    close(pipefd[1]);
    err_name = with_suffix(base, ".err");
    int rd = pipefd[0];
    for (;;) {
      struct pollfd p[2] = {{rd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (rd >= 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
        /* One read a turn, so that the command's end is seen between writes. */
        if (!copy_once(rd)) {
          close(rd);
          rd = -1; /* poll leaves a negative descriptor alone */
        }
      }
      if (p[1].revents & POLLIN) {
        char drain[64];
        while (read(wake[0], drain, sizeof drain) > 0) {
        }
        if (reap(child, &status)) {
          reaped = 1;
          break;
        }
      }
    }
    if (rd >= 0) {
      /* What the command wrote before it ended is in the pipe: copied, without waiting for an end
         that a leftover holding stderr would put off. */
      fcntl(rd, F_SETFL, fcntl(rd, F_GETFL) | O_NONBLOCK);
      char buf[65536];
      ssize_t k;
      while ((k = read(rd, buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR)) {
        if (k > 0) copy_out(buf, (size_t)k);
      }
      close(rd);
    }
    if (err_fd >= 0) close(err_fd);
  }
  while (!reaped) {
    int st;
    pid_t p = waitpid(-1, &st, 0);
    if (p == child) status = st;
    if (p == child || (p < 0 && errno != EINTR)) reaped = 1;
  }
  /* Nothing of the run left: every child reaped, and none alive (ECHILD). */
  int alone = 0;
  if (subreaper) {
    for (;;) {
      pid_t p = waitpid(-1, NULL, WNOHANG);
      if (p > 0) continue;
      alone = p < 0 && errno == ECHILD;
      break;
    }
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;

  /* 4. The status, last. */
  char *statusname = with_suffix(base, ".status");
  fd = open(statusname, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd >= 0) {
    dprintf(fd, "%d %s%s\n", code, run_id, alone ? " alone" : "");
    close(fd);
  }
  return code;
}
