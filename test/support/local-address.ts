import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";

// An address of this machine that is not a loopback one: clients treat loopback specially (a
// proxy is never used for it), so a test that needs an ordinary host to be reached directly or
// through a proxy serves on this address. A bridge link (as the testbed's, test/support/
// testbed.ts) holding 10.252.<n>.1/32; the link name carries <n>, and creating a link whose name
// exists fails, which makes the claim atomic between test files running side by side. Root
// needed (CI runs as root).

const run = promisify(execFile);

export interface LocalAddress {
  address: string;
  release(): Promise<void>;
}

export async function claimLocalAddress(): Promise<LocalAddress> {
  for (let attempt = 0; attempt < 40; attempt++) {
    const octet = 1 + Math.floor(Math.random() * 254);
    const link = `kfla${octet}`;
    try {
      await run("ip", ["link", "add", link, "type", "bridge"]);
    } catch (e) {
      if (/exists/i.test((e as { stderr?: string }).stderr ?? "")) continue;
      throw e;
    }
    const address = `10.252.${octet}.1`;
    const drop = () => {
      try {
        execFileSync("ip", ["link", "delete", link], { stdio: "ignore" });
      } catch {
        /* already gone */
      }
    };
    process.once("exit", drop);
    try {
      await run("ip", [
        "link",
        "set",
        link,
        "alias",
        `kubeforge test address (pid ${process.pid})`,
      ]);
      await run("ip", ["addr", "add", `${address}/32`, "dev", link]);
      await run("ip", ["link", "set", link, "up"]);
    } catch (e) {
      drop();
      throw e;
    }
    return {
      address,
      release: async () => {
        process.removeListener("exit", drop);
        await run("ip", ["link", "delete", link]).catch(() => undefined);
      },
    };
  }
  throw new Error("no free 10.252.<n>.1 address for a test link after 40 attempts");
}
