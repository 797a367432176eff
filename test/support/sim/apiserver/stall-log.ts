import { performance } from "node:perf_hooks";

// SIMULATION LIMIT made visible: the simulated kube-apiserver shares one event loop with all its
// process runs beside it (the runtime daemon's containers, a synchronous etcd call) and, on a
// loaded machine, waits for a core like any process; a real kube-apiserver serves on many
// threads. A pause of that loop of `thresholdMs` or more is logged when it ends, as "the event
// loop held the API server for <n> ms", so that a test can tell a held simulation from an
// endpoint that went away. Kept apart from kubeforge's own watch of its loop (the upgrade probes'
// loop-pauses.ts), as the simulation's other parts are from the code they test.

const EVERY_MS = 100;

/** Starts logging the loop's pauses; returns the function that stops it. */
export function logStalls(log: (line: string) => void, thresholdMs = 500): () => void {
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const held = Math.round(now - last - EVERY_MS);
    if (held >= thresholdMs) log(`the event loop held the API server for ${held} ms`);
    last = now;
  }, EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
