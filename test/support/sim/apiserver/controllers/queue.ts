// SIMULATION (test double). A tiny stand-in for client-go's workqueue: keys are deduplicated,
// processed one at a time after the current event dispatch, retried with a short backoff, and
// can be scheduled for later (AddAfter). k8s: staging/src/k8s.io/client-go/util/workqueue.

export class WorkQueue {
  private readonly pending = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly failures = new Map<string, number>();
  private running = false;
  private stopped = false;

  constructor(
    private readonly handler: (key: string) => Promise<void> | void,
    private readonly onError: (key: string, err: unknown) => void,
  ) {}

  add(key: string): void {
    if (this.stopped) return;
    this.pending.add(key);
    this.kick();
  }

  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    const t = setTimeout(
      () => {
        this.timers.delete(t);
        this.add(key);
      },
      Math.max(0, ms),
    );
    t.unref();
    this.timers.add(t);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.pending.clear();
  }

  private kick(): void {
    if (this.running) return;
    this.running = true;
    setImmediate(() => void this.drain());
  }

  private async drain(): Promise<void> {
    while (this.pending.size > 0 && !this.stopped) {
      const key = this.pending.values().next().value!;
      this.pending.delete(key);
      try {
        await this.handler(key);
        this.failures.delete(key);
      } catch (e) {
        const n = (this.failures.get(key) ?? 0) + 1;
        this.failures.set(key, n);
        this.onError(key, e);
        if (n < 5) this.addAfter(key, 50 * 2 ** n);
      }
    }
    this.running = false;
    if (this.pending.size > 0 && !this.stopped) this.kick();
  }
}
