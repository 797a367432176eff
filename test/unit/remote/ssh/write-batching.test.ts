import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { batchWritesPerTick } from "../../../../src/remote/ssh/write-batching.js";

// The SSH connection's socket: what is written in one tick leaves in one writev (one system
// call); what is written in another tick leaves in another; nothing is lost or reordered.

/** A stream that records each system-call-like flush: the chunks of each _write/_writev. */
function recording(): { stream: Writable; flushes: string[][] } {
  const flushes: string[][] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      flushes.push([chunk.toString()]);
      done();
    },
    writev(chunks, done) {
      flushes.push(chunks.map((c) => (c.chunk as Buffer).toString()));
      done();
    },
  });
  return { stream, flushes };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("batchWritesPerTick", () => {
  it("sends the writes of one tick together, in order", async () => {
    const { stream, flushes } = recording();
    batchWritesPerTick(stream);
    stream.write("open-1");
    stream.write("open-2");
    stream.write(Buffer.from("open-3"));
    expect(flushes).toEqual([]);
    await tick();
    expect(flushes).toEqual([["open-1", "open-2", "open-3"]]);
  });

  it("sends each tick's writes on their own, and calls each write's callback", async () => {
    const { stream, flushes } = recording();
    batchWritesPerTick(stream);
    const written: string[] = [];
    stream.write("a", () => written.push("a"));
    await tick();
    stream.write("b", () => written.push("b"));
    stream.write("c", () => written.push("c"));
    await tick();
    expect(flushes).toEqual([["a"], ["b", "c"]]);
    expect(written).toEqual(["a", "b", "c"]);
  });

  it("leaves the stream uncorked once the tick ends", async () => {
    const { stream } = recording();
    batchWritesPerTick(stream);
    stream.write("x");
    expect(stream.writableCorked).toBe(1);
    await tick();
    expect(stream.writableCorked).toBe(0);
  });
});
