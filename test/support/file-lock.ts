import { spawn } from "node:child_process";

// A lock shared by every test process of the machine, held by flock(1) for as long as its stdin
// stays open. The kernel drops a flock with the last descriptor of its file, so a test run that
// is killed (Ctrl-C, a CI job cancelled, kill -9) leaves no lock behind for the next run to wait
// out, as a lock folder would until judged stale. The lock file is never removed: a process
// waiting on it would then hold a lock on a removed file.

/**
 * Runs `fn` holding an exclusive lock on `file` (created when missing); waits up to `waitMs`
 * for another process to release it, then fails naming the file.
 */
export async function withFileLock<T>(
  file: string,
  fn: () => Promise<T>,
  waitMs: number,
): Promise<T> {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  const holder = spawn(
    "flock",
    // Says it holds the lock, then keeps it until its stdin ends (this process's end too).
    ["--exclusive", "--timeout", String(seconds), file, "sh", "-c", "echo held && exec cat"],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let said = "";
  holder.stderr.on("data", (d: Buffer) => (said += d.toString()));
  // flock's exit status 1: the timeout passed (--conflict-exit-code's default).
  const ended = new Promise<string>((resolve) => {
    holder.on("error", (e) => resolve(`could not run flock: ${e.message}`));
    holder.on("exit", (code, signal) =>
      resolve(
        code === 1 && !said.trim()
          ? `was not released within ${seconds} s`
          : `could not be taken: ${said.trim() || `flock ended with ${code ?? signal}`}`,
      ),
    );
  });
  const taken = new Promise<void>((resolve) => holder.stdout.once("data", () => resolve()));
  const failure = await Promise.race([taken.then(() => undefined), ended]);
  if (failure !== undefined) throw new Error(`the test lock ${file} ${failure}`);
  try {
    return await fn();
  } finally {
    holder.stdin.end();
    await ended;
  }
}
