import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ImagePullPolicy } from "../../../src/config/types.js";
import { controlPlaneImages } from "../../../src/manifests/images.js";
import { PreflightError } from "../../../src/node/preflight/checks.js";
import { connectCRI, type CRIConnection } from "../../../src/node/preflight/cri.js";
import {
  imagePullInput,
  runPullImagesCheck,
  type ImagePullInput,
} from "../../../src/node/preflight/image-pull.js";
import { LocalHost } from "../../../src/remote/local.js";
import { baseInitConfig, testRelease } from "../../support/init-fixtures.js";

// kubeadm's RunPullImagesCheck (preflight/checks.go ImagePullCheck) with a small fake crictl on
// a search path of the test's own: `version` answers unless the folder holds "down", `info`
// reports the sandbox image written in "sandbox", images it "has" are files in "store", a pull
// takes a moment (its start and end in "timeline"; with a number N in "barrier", until N pulls
// have started or 10 s passed, so concurrency shows however loaded the machine) and an image
// named "missing" fails as a registry's 404 does. Every call is recorded in "calls".

let dir: string;
const SOCKET = "unix:///var/run/containerd/containerd.sock";
const host = new LocalHost();

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "kubeforge-image-pull-"));
  await writeFile(
    join(dir, "crictl"),
    `#!/bin/sh
DIR='${dir}'
echo "$*" >> "$DIR/calls"
while [ $# -gt 0 ]; do
  case "$1" in --runtime-endpoint|--image-endpoint) shift 2;; *) break;; esac
done
cmd="$1"; shift
[ "$1" = "-q" ] && shift
key=$(printf '%s' "$1" | tr '/:' '__')
case "$cmd" in
  version) [ -f "$DIR/down" ] && { echo 'connect: connection refused' >&2; exit 1; }; echo "Version: 0.1.0";;
  info) printf '{"status":{},"config":{"sandboxImage":"%s"}}\\n' "$(cat "$DIR/sandbox" 2>/dev/null)";;
  inspecti)
    for i in "$@"; do
      [ -f "$DIR/store/$(printf '%s' "$i" | tr '/:' '__')" ] || { echo "no such image \\"$i\\" present" >&2; exit 1; }
    done;;
  pull)
    echo "start $(date +%s%N)" >> "$DIR/timeline"
    if [ -f "$DIR/barrier" ]; then
      n=0
      while [ "$(grep -c '^start' "$DIR/timeline")" -lt "$(cat "$DIR/barrier")" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done
    else sleep 0.2; fi
    echo "end $(date +%s%N)" >> "$DIR/timeline"
    case "$1" in *missing*) echo "E1121 pull image: rpc error: code = NotFound desc = failed to pull and unpack image \\"$1\\": not found" >&2; exit 1;; esac
    mkdir -p "$DIR/store"; : > "$DIR/store/$key";;
esac
`,
  );
  await chmod(join(dir, "crictl"), 0o755);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const images = (...names: string[]) => names.map((n) => `registry.k8s.io/${n}:v1`);

async function have(...names: string[]) {
  const { mkdir } = await import("node:fs/promises");
  await mkdir(join(dir, "store"), { recursive: true });
  for (const i of images(...names))
    await writeFile(join(dir, "store", i.replace(/[/:]/g, "_")), "");
}

async function calls(verb: string): Promise<string[]> {
  const text = await readFile(join(dir, "calls"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((l) => l.split(" ").includes(verb))
    .map((l) =>
      l
        .split(" ")
        .slice(l.split(" ").indexOf(verb) + 1)
        .filter((w) => w !== "-q")
        .join(" "),
    );
}

function input(over: Partial<ImagePullInput> = {}): ImagePullInput {
  return {
    host,
    criSocket: SOCKET,
    images: images("a", "b", "c"),
    sandboxImage: "registry.k8s.io/pause:3.10.1",
    policy: "IfNotPresent",
    serial: true,
    lookup: { searchPath: dir },
    ...over,
  };
}

async function run(i: ImagePullInput, ignore: string[] = [], connected?: CRIConnection) {
  const warns: string[] = [];
  const infos: string[] = [];
  const error = await runPullImagesCheck(
    i,
    new Set(ignore),
    { info: (l) => infos.push(l), warn: (l) => warns.push(l) },
    connected,
  ).catch((e: unknown) => e as Error);
  return { error, warns, infos };
}

describe("preflight image pull (kubeadm RunPullImagesCheck)", () => {
  it("IfNotPresent, serial: pulls the missing images one after another, in order", async () => {
    await have("b");
    const { error, warns } = await run(input());
    expect(error).toBeUndefined();
    expect(warns).toEqual([]);
    // One question for all three (b is there, a is not), then one for each.
    expect(await calls("inspecti")).toEqual([
      images("a", "b", "c").join(" "),
      ...images("a", "b", "c"),
    ]);
    expect(await calls("pull")).toEqual(images("a", "c"));
    const timeline = (await readFile(join(dir, "timeline"), "utf8")).trim().split("\n");
    expect(timeline.map((l) => l.split(" ")[0])).toEqual(["start", "end", "start", "end"]);
  });

  it("IfNotPresent with every image there: one question to the runtime, no pull", async () => {
    await have("a", "b", "c");
    const { error, warns } = await run(input());
    expect([error, warns]).toEqual([undefined, []]);
    expect(await calls("inspecti")).toEqual([images("a", "b", "c").join(" ")]);
    expect(await calls("pull")).toEqual([]);
  });

  it("says every so often which images are still to pull, and stops when the pull ends", async () => {
    // Each pull takes at least 0.2 s in the fake; a beat every 50 ms cannot miss them all.
    const { error, infos } = await run(input({ heartbeat: { everyMs: 50 } }));
    expect(error).toBeUndefined();
    const beats = infos.filter((l) => l.startsWith("still pulling"));
    expect(beats.length).toBeGreaterThan(0);
    const all = images("a", "b", "c");
    for (const b of beats) {
      const m = /^still pulling after \d+s: (.+)$/.exec(b);
      expect(m, b).not.toBeNull();
      // Serial: the image in flight and those after it, in order.
      const listed = m![1]!.split(", ");
      expect(all.slice(all.length - listed.length)).toEqual(listed);
    }
    const count = beats.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(infos.filter((l) => l.startsWith("still pulling"))).toHaveLength(count);
  });

  it("Always pulls every image, present or not", async () => {
    await have("a", "b", "c");
    await run(input({ policy: "Always" }));
    expect(await calls("inspecti")).toEqual([]);
    expect(await calls("pull")).toEqual(images("a", "b", "c"));
  });

  it("Never pulls nothing and checks nothing", async () => {
    const { error } = await run(input({ policy: "Never" }));
    expect(error).toBeUndefined();
    expect([...(await calls("inspecti")), ...(await calls("pull"))]).toEqual([]);
  });

  it("an unknown policy is the check's error; ignoring ImagePull makes it a warning", async () => {
    const policy = "Sometimes" as ImagePullPolicy;
    const { error } = await run(input({ policy }));
    expect(error).toBeInstanceOf(PreflightError);
    expect((error as PreflightError).failures).toEqual([
      { check: "ImagePull", message: 'unsupported pull policy "Sometimes"' },
    ]);
    const ignored = await run(input({ policy }), ["imagepull"]);
    expect(ignored.error).toBeUndefined();
    expect(ignored.warns).toEqual(['\t[WARNING ImagePull]: unsupported pull policy "Sometimes"']);
  });

  it("names every image that failed, with the runtime's words, and still pulls the rest", async () => {
    const { error } = await run(input({ images: images("missing-1", "ok", "missing-2") }));
    expect((error as PreflightError).failures.map((f) => f.message)).toEqual([
      `failed to pull image registry.k8s.io/missing-1:v1: E1121 pull image: rpc error: code = NotFound desc = failed to pull and unpack image "registry.k8s.io/missing-1:v1": not found`,
      `failed to pull image registry.k8s.io/missing-2:v1: E1121 pull image: rpc error: code = NotFound desc = failed to pull and unpack image "registry.k8s.io/missing-2:v1": not found`,
    ]);
    expect(await calls("pull")).toEqual(images("missing-1", "ok", "missing-2"));
  });

  it("imagePullSerial false: every image at once, the failures as one aggregate error", async () => {
    await writeFile(join(dir, "barrier"), "4");
    const { error } = await run(
      input({ serial: false, images: images("missing-1", "ok", "missing-2", "d") }),
    );
    const failures = (error as PreflightError).failures;
    expect(failures).toHaveLength(1);
    expect(failures[0]!.message).toMatch(
      /^\[failed to pull image registry\.k8s\.io\/missing-1:v1: .*not found, failed to pull image registry\.k8s\.io\/missing-2:v1: .*not found\]$/,
    );
    const timeline = (await readFile(join(dir, "timeline"), "utf8")).trim().split("\n");
    expect(timeline.slice(0, 4).map((l) => l.split(" ")[0])).toEqual(Array(4).fill("start"));
  });

  it("warns when the runtime's sandbox image is not the cluster's pause image", async () => {
    await writeFile(join(dir, "sandbox"), "registry.k8s.io/pause:3.8");
    const { warns } = await run(input());
    expect(warns).toEqual([
      'detected that the sandbox image "registry.k8s.io/pause:3.8" of the container runtime is inconsistent with that used by kubeadm. It is recommended to use "registry.k8s.io/pause:3.10.1" as the CRI sandbox image.',
    ]);
    await writeFile(join(dir, "sandbox"), "registry.k8s.io/pause:3.10.1");
    expect((await run(input())).warns).toEqual([]);
  });

  it("asked beside the connection, the runtime's info and the images' presence are not asked again", async () => {
    await have("a", "b", "c");
    await writeFile(join(dir, "sandbox"), "registry.k8s.io/pause:3.8");
    const i = input();
    const connection = await connectCRI(host, SOCKET, i.lookup, {
      imagePull: { images: i.images },
    });
    if (!connection.connected) throw new Error(connection.reason);
    await Promise.all([connection.info, connection.imagesPresent?.answer]);
    expect([await calls("info"), await calls("inspecti")]).toEqual([
      [""],
      [images("a", "b", "c").join(" ")],
    ]);
    const warns: string[] = [];
    await runPullImagesCheck(
      i,
      new Set(),
      { info: () => {}, warn: (l) => warns.push(l) },
      connection,
    );
    // The check took both answers: the sandbox warning from the info, no pull, no new question.
    expect(warns).toEqual([
      expect.stringContaining('the sandbox image "registry.k8s.io/pause:3.8"'),
    ]);
    expect([await calls("info"), await calls("inspecti"), await calls("pull")]).toEqual([
      [""],
      [images("a", "b", "c").join(" ")],
      [],
    ]);
  });

  it("an answer asked beside the connection for other images is not taken", async () => {
    await have("a", "b");
    const connection = await connectCRI(host, SOCKET, input().lookup, {
      imagePull: { images: images("a", "b") },
    });
    if (!connection.connected) throw new Error(connection.reason);
    const { error } = await run(input(), [], connection);
    expect(error).toBeUndefined();
    expect(await calls("inspecti")).toEqual([
      images("a", "b").join(" "),
      images("a", "b", "c").join(" "),
      ...images("a", "b", "c"),
    ]);
    expect(await calls("pull")).toEqual(images("c"));
  });

  it("a runtime that does not answer fails preflight, whatever is ignored", async () => {
    await writeFile(join(dir, "down"), "");
    const { error } = await run(input(), ["all"]);
    expect((error as Error).message).toBe(
      `cannot pull the control-plane images: validate CRI v1 runtime API for endpoint "${SOCKET}": connect: connection refused`,
    );
    expect(await calls("pull")).toEqual([]);
  });

  it("takes the images, socket and pull settings from the configuration", () => {
    const cfg = baseInitConfig({}, (c) => {
      c.init.nodeRegistration.imagePullPolicy = "Always";
      c.init.nodeRegistration.imagePullSerial = false;
      c.cluster.imageRepository = "mirror.example.com/k8s";
    });
    const release = testRelease();
    const i = imagePullInput(cfg.cluster, release, cfg.init.nodeRegistration, host);
    expect(i).toMatchObject({
      criSocket: cfg.init.nodeRegistration.criSocket,
      policy: "Always",
      serial: false,
      sandboxImage: `mirror.example.com/k8s/pause:${release.pauseVersion}`,
    });
    expect(i.images).toEqual(controlPlaneImages(cfg.cluster, release));
    expect(i.images[0]).toBe(
      `mirror.example.com/k8s/kube-apiserver:${cfg.cluster.kubernetesVersion}`,
    );
  });
});
