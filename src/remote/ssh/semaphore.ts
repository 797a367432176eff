/** At most `limit` holders at once; waiters are served in arrival order. */
export class Semaphore {
  private active = 0;
  private readonly waiters: { grant: () => void; fail: (e: Error) => void }[] = [];
  private failure: Error | undefined;

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new Error(`semaphore limit must be ≥ 1, got ${limit}`);
  }

  /** Resolves with a release function once a slot is free; rejects after `fail()`. */
  acquire(): Promise<() => void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const grant = () => {
        this.active++;
        let released = false;
        resolve(() => {
          if (released) return;
          released = true;
          this.active--;
          this.next();
        });
      };
      if (this.active < this.limit) grant();
      else this.waiters.push({ grant, fail: reject });
    });
  }

  /** Rejects every waiter and every later acquire with `error` (the connection is gone). */
  fail(error: Error): void {
    this.failure = error;
    for (const w of this.waiters.splice(0)) w.fail(error);
  }

  /** Holders right now (tests). */
  get inUse(): number {
    return this.active;
  }

  private next(): void {
    if (this.active < this.limit) this.waiters.shift()?.grant();
  }
}
