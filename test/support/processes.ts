// Process checks the test support and tests share.

import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether a process runs: it exists and is not a zombie waiting for its parent to reap it. */
export function running(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Polls `check` every 100 ms until it holds or `ms` passed; its last answer. */
export async function eventually(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

/** The content of a file some process is about to write (non-empty), or an error after `ms`. */
export async function waitForFile(path: string, ms: number): Promise<string> {
  const deadline = Date.now() + ms;
  for (;;) {
    const text = await readFile(path, "utf8").catch(() => "");
    if (text.trim() !== "") return text;
    if (Date.now() > deadline) throw new Error(`${path} was not written within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
