// Ending a cancelled command on a root login. sshd refuses signal requests there ("session
// signalling requires privilege separation": OpenSSH runs a root session without the
// unprivileged child that would deliver them), so kubeforge does what sshd would have done,
// killpg() on the session: sshd makes each session's shell a session and process-group leader
// (setsid in do_exec_no_pty), so the shell's `$$`, kept by `exec`, names the group, and a
// `kill -TERM -<pgid>` on a second channel reaches the command and everything it started.

const MARKER = "kubeforge-pgid=";

/** The command line with its process group reported first, on stderr. */
export function reportingProcessGroup(command: string): string {
  return `printf '${MARKER}%s\\n' "$$" >&2; exec ${command}`;
}

/**
 * `kill -<signal> -<pgid>`: the signal to every process of the group. No `--` and no `-s`: dash's
 * kill builtin (Debian's and Ubuntu's sh) takes neither before a negative pid.
 */
export function killGroupCommand(pgid: number, signal: "TERM" | "KILL"): string {
  return `kill -${signal} -${pgid}`;
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
