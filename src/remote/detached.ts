// Ending a detached process kubeforge started on the runner (the tunnel, the local registry)
// and recorded by pid: SIGTERM, then SIGKILL if it has not exited after `graceMs`.

/** Stops `pid`; false when it was not running. Resolves once it has exited. */
export async function stopDetached(pid: number, graceMs = 5000): Promise<boolean> {
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return false;
  }
  const end = Date.now() + graceMs;
  while (Date.now() < end) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  process.kill(pid, "SIGKILL");
  return true;
}
