import { execFile, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { MIN_NODE_MAJOR, buildOptions } from "../../scripts/build-options.mjs";
import { bundledCli } from "../support/cli.js";

// The shipped bundles must load on a runner with no node_modules and must never load a
// native add-on (ssh2's cpu-features and sshcrypto.node are optional: mscdex/ssh2#1087).

const run = promisify(execFile);

/** The machine's own Node (20 on these machines), found outside npm's PATH, which puts 24 first. */
const machineNode = ["/usr/bin/node", "/usr/local/bin/node"].find((p) => existsSync(p));
const machineNodeVersion = machineNode
  ? execFileSync(machineNode, ["-p", "process.version"]).toString().trim()
  : "none";
const dirs: string[] = [];

afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe("bundles", () => {
  it("loads ssh2 from a bundle built with the project's options without any native add-on", async () => {
    // This checkout has cpu-features compiled in node_modules: the bundle must still not load it.
    const dir = await mkdtemp(join(process.cwd(), "node_modules/.kubeforge-bundle-test-"));
    dirs.push(dir);
    await writeFile(join(dir, "package.json"), '{ "type": "module" }\n'); // as dist/ is
    const entry = join(dir, "entry.ts");
    await writeFile(
      entry,
      [
        "const loaded: string[] = [];",
        "const dlopen = process.dlopen.bind(process);",
        "process.dlopen = (module: { exports: unknown }, filename: string, flags?: number) => {",
        "  loaded.push(filename);",
        "  return dlopen(module, filename, flags);",
        "};",
        // As src/remote/ssh/connection.ts loads it: a split bundle's import() of a CommonJS
        // module gives its exports as `default` only.
        'const { default: ssh2 } = await import("ssh2");',
        "const client = new ssh2.Client();",
        "console.log(JSON.stringify({ loaded, client: typeof client.connect }));",
      ].join("\n"),
    );
    const options = buildOptions(dir);
    await build({ ...options, entryPoints: { probe: entry } });
    const { stdout } = await run(process.execPath, [join(dir, "probe.js")], { cwd: dir });
    expect(JSON.parse(stdout)).toEqual({ loaded: [], client: "function" });
  });

  it("ship no reference to a .node file and run from a folder without node_modules", async () => {
    // In the temporary folder: no node_modules up the tree, as on a runner.
    const dir = await mkdtemp(join(tmpdir(), "kubeforge-dist-"));
    dirs.push(dir);
    await build(buildOptions(dir));
    // Every output file: the entry points and the chunks they share or load.
    const outputs = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith(".js"));
    expect(outputs).toEqual(expect.arrayContaining(["cli.js", "main.js", "post.js"]));
    for (const name of outputs) {
      const text = await readFile(join(dir, name), "utf8");
      expect([name, /require\([^)]*\.node["'`]\)/.test(text)]).toEqual([name, false]);
    }
    const { stdout } = await run(process.execPath, [join(dir, "cli.js"), "--version"], {
      cwd: dir,
    });
    expect(stdout).toMatch(/^kubeforge /);
  });

  it("need the Node that package.json's engines and action.yml name", async () => {
    const pkg = JSON.parse(await readFile("package.json", "utf8")) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${MIN_NODE_MAJOR}`);
    expect(await readFile("action.yml", "utf8")).toContain(`using: node${MIN_NODE_MAJOR}\n`);
  });

  it("say in one sentence that they need Node 24 when started by an older Node", async () => {
    expect(Number(/^v(\d+)\./.exec(machineNodeVersion)?.[1]), machineNodeVersion).toBeLessThan(
      MIN_NODE_MAJOR,
    );
    for (const name of ["cli.js", "main.js", "post.js"]) {
      const r = await run(machineNode!, [join("dist", name), "--version"]).catch(
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect([name, "code" in r ? r.code : 0, r.stdout, r.stderr]).toEqual([
        name,
        1,
        "",
        `kubeforge needs Node.js ${MIN_NODE_MAJOR} or later; this is Node.js ${machineNodeVersion}\n`,
      ]);
    }
  });

  it("the command keeps Node's compile cache in the user's own cache folder: a second run takes its compiled code from the first", async () => {
    const cli = await bundledCli();
    const temp = await mkdtemp(join(tmpdir(), "kubeforge-compile-cache-"));
    dirs.push(temp);
    const home = join(temp, "home");
    const shared = join(temp, "tmp");
    await mkdir(shared);
    // No NODE_COMPILE_CACHE: the cache is on because kubeforge turns it on, under HOME, not in
    // the temporary folder every local user can write to.
    const { NODE_COMPILE_CACHE: _, XDG_CACHE_HOME: __, ...env } = process.env;
    const once = () =>
      run(process.execPath, [join(cli.dir, "cli.js"), "--version"], {
        env: { ...env, HOME: home, TMPDIR: shared, NODE_DEBUG_NATIVE: "COMPILE_CACHE" },
      });
    const first = await once();
    expect(first.stdout).toMatch(/^kubeforge /);
    const cache = join(home, ".cache", "kubeforge", "node-compile-cache");
    expect(await readdir(cache)).toHaveLength(1);
    expect(await readdir(shared)).toEqual([]);
    const second = await once();
    expect(second.stdout).toMatch(/^kubeforge /);
    // The command's own chunk (imported after the cache is on) came from the cache.
    expect(second.stderr).toMatch(
      /V8 code cache for ESM file:\S+\/chunks\/program-\w+\.js was accepted/,
    );
    // $XDG_CACHE_HOME, when set, is the user's cache folder.
    const xdg = join(temp, "xdg");
    const third = await run(process.execPath, [join(cli.dir, "cli.js"), "--version"], {
      env: { ...env, HOME: home, XDG_CACHE_HOME: xdg, TMPDIR: shared },
    });
    expect(third.stdout).toMatch(/^kubeforge /);
    expect(await readdir(join(xdg, "kubeforge", "node-compile-cache"))).toHaveLength(1);
  });

  it("give bundled code all of node:http, accessors too, without loading Node's undici", async () => {
    // @actions/http-client reads http.globalAgent (an accessor) for every request; node:http's
    // lazy WebSocket getters load Node's own undici, which start-up should not pay for.
    const dir = await mkdtemp(join(process.cwd(), "node_modules/.kubeforge-bundle-test-"));
    dirs.push(dir);
    await writeFile(join(dir, "package.json"), '{ "type": "module" }\n');
    const entry = join(dir, "entry.ts");
    await writeFile(
      entry,
      [
        'import * as http from "http";',
        'import { globalAgent, request } from "node:http";',
        'const undici = process.moduleLoadList.filter((m) => m.includes("undici"));',
        "console.log(JSON.stringify({",
        "  agent: http.globalAgent instanceof http.Agent && globalAgent === http.globalAgent,",
        "  maxHeaderSize: http.maxHeaderSize > 0,",
        '  request: typeof request === "function",',
        "  undici,",
        "}));",
      ].join("\n"),
    );
    await build({ ...buildOptions(dir), entryPoints: { probe: entry } });
    const { stdout } = await run(process.execPath, [join(dir, "probe.js")], { cwd: dir });
    expect(JSON.parse(stdout)).toEqual({
      agent: true,
      maxHeaderSize: true,
      request: true,
      undici: [],
    });
  });
});
