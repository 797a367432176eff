import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { running, waitForFile } from "../../support/processes.js";
import { LocalHost } from "../../../src/remote/local.js";
import { prePullImages } from "../../../src/node/images.js";
import { HostDouble, onPath } from "../../support/host-double.js";

// prePullImages with a small fake crictl (a shell script in the test's folder): images it
// "has" are files in a store folder, `pull` takes a moment and records when it ran, and an image
// whose name contains "missing" fails as a registry's 404 does, one whose name contains "stalled"
// waits as a pull from a registry that stopped answering (its pid in <name>.pid). The simulated
// node's crictl (test/support/sim/kubelet/crictl.ts) records pulls without taking any time.

let dir: string;
let crictl: string;
const SOCKET = "unix:///var/run/containerd/containerd.sock";

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "kubeforge-images-"));
  crictl = join(dir, "crictl");
  await writeFile(
    crictl,
    `#!/bin/sh
# Fake crictl for prePullImages tests. Global flags come first, then the command.
DIR='${dir}'
echo "$*" >> "$DIR/calls"
while [ $# -gt 0 ]; do
  case "$1" in
    --runtime-endpoint|--image-endpoint) [ "$2" = '${SOCKET}' ] || { echo "wrong endpoint $2" >&2; exit 2; }; shift 2;;
    *) break;;
  esac
done
cmd="$1"; shift
[ "$1" = "-q" ] && shift
key=$(printf '%s' "$1" | tr '/:' '__')
case "$cmd" in
  inspecti)
    for i in "$@"; do
      [ -f "$DIR/store/$(printf '%s' "$i" | tr '/:' '__')" ] || { echo "no such image \\"$i\\" present" >&2; exit 1; }
      echo "sha256:abc"
    done;;
  pull)
    case "$1" in *stalled*) echo $$ > "$DIR/$key.pid"; exec sleep 60;; esac
    echo "start $(date +%s%N)" >> "$DIR/timeline"
    sleep 0.3
    echo "end $(date +%s%N)" >> "$DIR/timeline"
    case "$1" in *missing*)
      echo "E1121 pull image: rpc error: code = NotFound desc = failed to pull and unpack image \\"$1\\": not found" >&2; exit 1;;
    esac
    mkdir -p "$DIR/store"; : > "$DIR/store/$key"; echo "Image is up to date for sha256:abc";;
  *) echo "unknown command $cmd" >&2; exit 1;;
esac
`,
  );
  await chmod(crictl, 0o755);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function node(crictlPath: string | null = crictl) {
  return new HostDouble(new LocalHost(), { commands: [onPath("crictl", crictlPath ?? undefined)] });
}

/** Most pulls running at the same moment, from the fake's start/end timeline. */
async function maxParallel(): Promise<number> {
  const events = (await readFile(join(dir, "timeline"), "utf8"))
    .trim()
    .split("\n")
    .map((l) => l.split(" ") as ["start" | "end", string])
    .sort((a, b) => (BigInt(a[1]) < BigInt(b[1]) ? -1 : BigInt(a[1]) > BigInt(b[1]) ? 1 : 0));
  let now = 0;
  let max = 0;
  for (const [kind] of events) {
    now += kind === "start" ? 1 : -1;
    max = Math.max(max, now);
  }
  return max;
}

const images = (n: number) => Array.from({ length: n }, (_, i) => `registry.k8s.io/img-${i}:v1`);

describe("prePullImages", () => {
  it("pulls every image, at most `concurrency` at once, and skips them the second time", async () => {
    const lines: string[] = [];
    await prePullImages(node(), images(6), {
      criSocket: SOCKET,
      concurrency: 3,
      log: (l) => lines.push(l),
    });
    expect(await maxParallel()).toBe(3);
    expect(lines.filter((l) => l.startsWith("pulled "))).toHaveLength(6);
    const pulls = (await readFile(join(dir, "calls"), "utf8"))
      .split("\n")
      .filter((l) => l.includes(" pull "));
    expect(pulls).toHaveLength(6);

    const again: string[] = [];
    await prePullImages(node(), [...images(6), images(6)[0]!], {
      criSocket: SOCKET,
      log: (l) => again.push(l),
    });
    expect(again.sort()).toEqual(images(6).map((i) => `image ${i} already present`));
    const pullsAfter = (await readFile(join(dir, "calls"), "utf8"))
      .split("\n")
      .filter((l) => l.includes(" pull "));
    expect(pullsAfter).toHaveLength(6);
    // The second time, one question answered for all six: no image asked about alone.
    const inspects = (await readFile(join(dir, "calls"), "utf8"))
      .split("\n")
      .filter((l) => l.includes(" inspecti "));
    expect(inspects.at(-1)).toContain(`inspecti -q ${images(6).join(" ")}`);
    expect(inspects).toHaveLength(1 + 6 + 1);
  });

  it("says every so often which pulls are still running", async () => {
    const lines: string[] = [];
    await prePullImages(node(), images(2), {
      criSocket: SOCKET,
      concurrency: 2,
      log: (l) => lines.push(l),
      heartbeat: { everyMs: 100 },
    });
    const beats = lines.filter((l) => l.startsWith("still pulling"));
    // Each pull takes 0.3 s in the fake: the beats name the images still being pulled.
    expect(beats.length).toBeGreaterThan(0);
    for (const b of beats) {
      expect(b).toMatch(
        /^still pulling after \d+s: registry\.k8s\.io\/img-[01]:v1(, registry\.k8s\.io\/img-[01]:v1)?$/,
      );
    }
    // Nothing beats once the last pull is done.
    expect(lines.at(-1)).toMatch(/^pulled /);
  });

  it("serialises with concurrency 1", async () => {
    await prePullImages(node(), images(3), { criSocket: SOCKET, concurrency: 1 });
    expect(await maxParallel()).toBe(1);
  });

  it("tries every image and names each failure and the host", async () => {
    const wanted = [
      "registry.k8s.io/missing-a:v1",
      "registry.k8s.io/ok:v1",
      "registry.k8s.io/missing-b:v1",
    ];
    const err = await prePullImages(node(), wanted, {
      criSocket: "/var/run/containerd/containerd.sock",
    }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toBe(
      [
        "local: failed to pull 2 of 3 images:",
        ' - registry.k8s.io/missing-a:v1: E1121 pull image: rpc error: code = NotFound desc = failed to pull and unpack image "registry.k8s.io/missing-a:v1": not found',
        ' - registry.k8s.io/missing-b:v1: E1121 pull image: rpc error: code = NotFound desc = failed to pull and unpack image "registry.k8s.io/missing-b:v1": not found',
      ].join("\n"),
    );
    // The good one was pulled regardless.
    await prePullImages(node(), ["registry.k8s.io/ok:v1"], {
      criSocket: SOCKET,
      log: (l) => expect(l).toContain("already present"),
    });
  });

  it("fails clearly without crictl, and on a bad concurrency", async () => {
    await expect(prePullImages(node(null), ["a:1"], { criSocket: SOCKET })).rejects.toThrow(
      "local: cannot pre-pull images: crictl is not on the PATH",
    );
    await expect(
      prePullImages(node(), ["a:1"], { criSocket: SOCKET, concurrency: 0 }),
    ).rejects.toThrow("image pull concurrency must be a positive whole number, not 0");
    await expect(prePullImages(node(null), [], { criSocket: SOCKET })).resolves.toBeUndefined();
  });

  it("cancelled: ends the pulls running, starts no more, and rejects once they are gone", async () => {
    const controller = new AbortController();
    const wanted = [
      "registry.k8s.io/stalled-a:v1",
      "registry.k8s.io/stalled-b:v1",
      "registry.k8s.io/later:v1",
    ];
    const run = prePullImages(node(), wanted, {
      criSocket: SOCKET,
      concurrency: 2,
      signal: controller.signal,
    });
    const pidFiles = ["stalled-a", "stalled-b"].map((n) =>
      join(dir, `registry.k8s.io_${n}_v1.pid`),
    );
    const pids = await Promise.all(
      pidFiles.map(async (f) => Number((await waitForFile(f, 10_000)).trim())),
    );
    controller.abort(new Error("up stopped"));
    const err = (await run.catch((e: unknown) => e)) as Error;
    expect(err.message).toBe("local: image pre-pull cancelled");
    expect((err.cause as Error).message).toBe("up stopped");
    for (const pid of pids) expect(running(pid)).toBe(false);
    // Asked about with the others at first (one question for all), never pulled nor asked alone.
    const calls = (await readFile(join(dir, "calls"), "utf8")).trim().split("\n");
    expect(calls.filter((c) => c.includes("registry.k8s.io/later:v1"))).toEqual([
      expect.stringMatching(
        /inspecti -q registry.k8s.io\/stalled-a:v1 registry.k8s.io\/stalled-b:v1 registry.k8s.io\/later:v1$/,
      ),
    ]);
  }, 20_000);
});
