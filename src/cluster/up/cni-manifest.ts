import { readFile } from "node:fs/promises";
import { parseManifest as parseObjects } from "../../config/manifest.js";
import type { KubeObject } from "../../kube/types.js";
import { contentKind } from "../../node/artifacts/content.js";
import { downloadText, type DownloadOptions } from "../../node/artifacts/download.js";

// The manifest of `cni: <path or URL>`: read or downloaded, then parsed and checked whole
// (config/manifest.ts) before anything is applied.

/** Calico's and Cilium's rendered manifests with their CRDs are a few MB; far above that is not a manifest. */
const MAX_MANIFEST_BYTES = 32 * 1024 * 1024;

export interface ManifestReadOptions {
  /** Download options (an extra CA for a private mirror, tests). */
  download?: DownloadOptions;
}

const isURL = (location: string) => /^https?:\/\//i.test(location);

async function manifestText(location: string, opts: ManifestReadOptions): Promise<string> {
  if (isURL(location)) {
    let text: string;
    try {
      text = await downloadText(
        location,
        { timeoutMs: 30_000, retries: 3, ...opts.download },
        MAX_MANIFEST_BYTES,
      );
    } catch (e) {
      // DownloadError already names the URL.
      throw new Error(`cannot download the CNI manifest: ${(e as Error).message}`, { cause: e });
    }
    // A mirror or proxy answering 200 with an error page must not be parsed as YAML.
    if (contentKind(Buffer.from(text.slice(0, 512))) === "html") {
      throw new Error(`the CNI manifest ${location} is an HTML page, not a YAML manifest`);
    }
    return text;
  }
  try {
    return await readFile(location, "utf8");
  } catch (e) {
    throw new Error(`cannot read the CNI manifest ${location}: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

/** Parses and checks the CNI manifest's text; `source` names it in errors. */
export function parseManifest(text: string, source: string): KubeObject[] {
  return parseObjects(text, source, "the CNI manifest");
}

/** Reads (a path on the runner) or downloads (an http(s) URL) the manifest, then parses it. */
export async function loadManifest(
  location: string,
  opts: ManifestReadOptions = {},
): Promise<KubeObject[]> {
  return parseManifest(await manifestText(location, opts), location);
}
