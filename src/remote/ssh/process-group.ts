// Ending a cancelled command on a root login. sshd refuses signal requests there ("session
// signalling requires privilege separation": OpenSSH runs a root session without the
// unprivileged child that would deliver them), so kubeforge does what sshd would have done,
// killpg() on the session: sshd makes each session's shell a session and process-group leader
// (setsid in do_exec_no_pty), so the shell's `$$`, kept by `exec`, names the group, and a
// `kill -TERM -<pgid>` on a second channel reaches the command and everything it started.

const MARKER = "kubeforge-pgid=";

/**
 * The command line with its process group reported first, on stderr. `sh` reports it whatever
 * the login shell is (fish has no `$$`); each `exec` keeps the session leader's pid.
 */
export function reportingProcessGroup(command: string): string {
  return `exec sh -c 'printf "${MARKER}%s\\n" "$$" >&2; exec "$@"' sh ${command}`;
}

/**
 * `kill -<signal> -<pgid>` by `sh`'s kill builtin: the signal to every process of the group.
 * Not the login shell's: fish has no kill builtin, and procps' /bin/kill reads `-<pgid>` after
 * `-TERM` as an option; not `--` or `-s` either, which dash's builtin refuses there.
 */
export function killGroupCommand(pgid: number, signal: "TERM" | "KILL"): string {
  return `sh -c 'kill -${signal} -${pgid}'`;
}

/**
 * Takes the report line off the front of a command's stderr: `feed` returns what belongs to the
 * command's own stderr, and `pgid` is set once the line has been read.
 */
export class ProcessGroupReport {
  pgid: number | undefined;
  private head: Buffer | undefined = Buffer.alloc(0);

  feed(chunk: Buffer): Buffer {
    if (!this.head) return chunk;
    const buffered = Buffer.concat([this.head, chunk]);
    const end = buffered.indexOf(0x0a);
    if (end < 0) {
      this.head = buffered;
      return Buffer.alloc(0);
    }
    this.head = undefined;
    const line = buffered.subarray(0, end).toString();
    const pgid = line.startsWith(MARKER) ? Number(line.slice(MARKER.length)) : NaN;
    if (Number.isInteger(pgid) && pgid > 1) {
      this.pgid = pgid;
      return buffered.subarray(end + 1);
    }
    // Not the report (a shell that printed something first): leave stderr as it came.
    return buffered;
  }

  /** What is still held back when the command ends without a complete report line. */
  rest(): Buffer {
    const rest = this.head ?? Buffer.alloc(0);
    this.head = undefined;
    return rest;
  }
}
