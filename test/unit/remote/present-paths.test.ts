import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { presentCRISockets } from "../../../src/node/preflight/cri.js";
import type { ExecOptions, Host } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";
import { presentPaths } from "../../../src/remote/present-paths.js";

// "Which of these paths exist", asked in one command run by this machine's sh: a file, a
// folder, a real Unix socket and missing paths, names with spaces and quotes among them.

let root: string;
let server: Server;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "kf-present-"));
  await mkdir(join(root, "a folder"));
  await writeFile(join(root, `it's "a" file`), "x");
  server = createServer();
  await new Promise<void>((resolve) => server.listen(join(root, "run.sock"), resolve));
});
afterAll(async () => {
  server.close();
  await rm(root, { recursive: true, force: true });
});

/** LocalHost, counting the commands it runs. */
function counting(): { host: Host; commands: string[][] } {
  const local = new LocalHost();
  const commands: string[][] = [];
  const host = Object.assign(Object.create(local) as Host, {
    exec: (argv: string[], opts?: ExecOptions) => {
      commands.push(argv);
      return local.exec(argv, opts);
    },
  });
  return { host, commands };
}

describe("presentPaths", () => {
  it("names the paths that exist (-e) or are sockets (-S), in the order asked, in one command", async () => {
    const paths = [
      join(root, "run.sock"),
      join(root, "missing $HOME"),
      join(root, "a folder"),
      join(root, `it's "a" file`),
    ];
    const { host, commands } = counting();
    expect(await presentPaths(host, "-e", paths)).toEqual([paths[0], paths[2], paths[3]]);
    expect(await presentPaths(host, "-S", paths)).toEqual([paths[0]]);
    expect(commands).toHaveLength(2);
    expect(await presentPaths(host, "-e", [])).toEqual([]);
    expect(commands).toHaveLength(2);
  });

  it("throws naming the command when it cannot run; presentCRISockets then finds none, as kubeadm's failed stat", async () => {
    const failing = Object.assign(Object.create(new LocalHost()) as Host, {
      exec: () => Promise.resolve({ code: 1, stdout: "", stderr: "sudo: a password is required" }),
    });
    await expect(presentPaths(failing, "-S", ["/run/x.sock"], { sudo: true })).rejects.toThrow(
      /sudo: a password is required/,
    );
    expect(await presentCRISockets(failing)).toEqual([]);
  });
});
