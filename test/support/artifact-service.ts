import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

// A simulation of GitHub's artifact service as @actions/artifact (v2 and later) talks to it, so
// that the post step's upload runs its real client code: the Twirp JSON API of the results
// service (ACTIONS_RESULTS_URL; POST /twirp/github.actions.results.api.v1.ArtifactService/
// CreateArtifact and FinalizeArtifact, actions/toolkit packages/artifact/src/generated/results/
// api/v1/artifact.twirp-client.ts) and the signed Azure Blob URL CreateArtifact hands out, to
// which the client uploads with @azure/storage-blob's uploadStream: Put Block (?comp=block) then
// Put Block List (?comp=blocklist), each answered 201 Created as Azure Storage does
// (learn.microsoft.com/rest/api/storageservices/put-block, put-block-list). The runtime token is
// a JWT whose `scp` claim carries "Actions.Results:<run>:<job>": the client reads the backend ids
// from it without verifying it (packages/artifact/src/internal/shared/util.ts).

export interface ArtifactService {
  /** ACTIONS_RESULTS_URL */
  url: string;
  /** ACTIONS_RUNTIME_TOKEN */
  token: string;
  /** Finalized artifacts: name, id, and the bytes uploaded (the zip). */
  artifacts: { name: string; id: number; bytes: Buffer }[];
  close(): Promise<void>;
}

const SERVICE = "/twirp/github.actions.results.api.v1.ArtifactService/";

function body(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** An unsigned JWT with the claims the client reads. */
function runtimeToken(): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  return `${part({ alg: "none", typ: "JWT" })}.${part({ scp: "Actions.GenericRead Actions.Results:run-1:job-1" })}.`;
}

export async function startArtifactService(): Promise<ArtifactService> {
  const artifacts: ArtifactService["artifacts"] = [];
  /** Blocks staged per blob path, and blobs committed. */
  const blocks = new Map<string, Map<string, Buffer>>();
  const blobs = new Map<string, Buffer>();
  let nextId = 4242;
  const json = (res: ServerResponse, value: object) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(value));
  };
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://localhost");
      const data = await body(req);
      if (req.method === "POST" && url.pathname === `${SERVICE}CreateArtifact`) {
        const { name } = JSON.parse(data.toString()) as { name: string };
        const port = (server.address() as AddressInfo).port;
        return json(res, {
          ok: true,
          signed_upload_url: `http://127.0.0.1:${port}/blob/${encodeURIComponent(name)}?sig=not-a-real-signature`,
        });
      }
      if (req.method === "POST" && url.pathname === `${SERVICE}FinalizeArtifact`) {
        const { name } = JSON.parse(data.toString()) as { name: string };
        const id = nextId++;
        artifacts.push({
          name,
          id,
          bytes: blobs.get(`/blob/${encodeURIComponent(name)}`) ?? Buffer.alloc(0),
        });
        return json(res, { ok: true, artifact_id: String(id) });
      }
      if (req.method === "PUT" && url.pathname.startsWith("/blob/")) {
        const staged = blocks.get(url.pathname) ?? new Map<string, Buffer>();
        blocks.set(url.pathname, staged);
        const comp = url.searchParams.get("comp");
        if (comp === "block") staged.set(url.searchParams.get("blockid") ?? "", data);
        else if (comp === "blocklist") {
          // <BlockList><Latest>id</Latest>...</BlockList>, in order.
          const ids = [...data.toString().matchAll(/<(?:Latest|Uncommitted|Committed)>([^<]*)</g)];
          blobs.set(
            url.pathname,
            Buffer.concat(ids.map((m) => staged.get(m[1]!) ?? Buffer.alloc(0))),
          );
        } else blobs.set(url.pathname, data); // Put Blob in one request
        res.writeHead(201, { etag: '"0x1"', "last-modified": new Date().toUTCString() });
        return res.end();
      }
      res.writeHead(404);
      res.end();
    })().catch(() => {
      res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    token: runtimeToken(),
    artifacts,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
