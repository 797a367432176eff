/** Keeps this thread's event loop busy for `ms`: a stall, for tests of what notices one. */
export function holdEventLoop(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    /* nothing runs meanwhile: no timer, no I/O callback */
  }
}
