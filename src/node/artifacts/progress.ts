// A line now and then while a long download runs, so a job log never looks hung: bytes so far,
// of how many when the server said, and the rate since the body started.

/** Between two progress lines: within the 15–30 s a CI log reader waits before suspecting a hang. */
export const PROGRESS_INTERVAL_MS = 20_000;

const UNITS = ["B", "KB", "MB", "GB"];

/** 1536 → "1.5 KB" (powers of 1024, one decimal from KB on). */
export function formatBytes(n: number): string {
  let unit = 0;
  let value = n;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
}

/** "52.4 MB of 110.1 MB (47%), 3.2 MB/s"; without a total, "52.4 MB, 3.2 MB/s". */
export function progressText(received: number, total: number | undefined, ms: number): string {
  const rate = ms > 0 ? `${formatBytes(Math.round((received * 1000) / ms))}/s` : "—";
  if (total === undefined || total <= 0) return `${formatBytes(received)}, ${rate}`;
  const percent = Math.floor((received * 100) / total);
  return `${formatBytes(received)} of ${formatBytes(total)} (${percent}%), ${rate}`;
}

/** Logs `downloading <url>: <progress>` every `intervalMs` until stopped. */
export function startProgress(
  url: string,
  total: number | undefined,
  received: () => number,
  log: ((line: string) => void) | undefined,
  intervalMs = PROGRESS_INTERVAL_MS,
): () => void {
  if (!log) return () => undefined;
  const started = performance.now();
  const timer = setInterval(() => {
    log(`downloading ${url}: ${progressText(received(), total, performance.now() - started)}`);
  }, intervalMs);
  // A progress line is never a reason to keep the process alive.
  timer.unref();
  return () => clearInterval(timer);
}
