import { createConnection } from "node:net";
import type { Duplex } from "node:stream";
import type Ssh2Module from "ssh2";
import type {
  AnyAuthMethod,
  AuthenticationType,
  Client as SshClient,
  ConnectConfig,
  ParsedKey,
  ServerHostKeyAlgorithm,
} from "ssh2";
import { abortReason, cancellable, pause } from "../interruption.js";
import { SshError, type SshFailure } from "./errors.js";
import { HostKeyChecker, fingerprintOf } from "./host-keys.js";
import { ssh2Key } from "./pkcs8.js";
import { batchWritesPerTick } from "./write-batching.js";
import { cipherKeysAsObjects } from "./cipher-keys.js";
import type { HostKeyPolicy, SshCredentials, SshEndpoint } from "./types.js";

type Ssh2 = typeof Ssh2Module;
let ssh2Module: Promise<Ssh2> | undefined;
/**
 * ssh2, loaded by the first connection: a cluster without SSH nodes never loads it. (Its
 * exports are the module's `default`: a split bundle gives a CommonJS module no named ones.)
 */
const loadSsh2 = () => (ssh2Module ??= import("ssh2").then((m) => m.default));

// One SSH connection: TCP (or a stream through a jump host), host-key check, authentication,
// with retries for transient network failures only. Authentication and host-key failures are
// final (k0sctl's "abort" errors): retrying them only burns the server's MaxAuthTries or hides
// a changed host.

export interface ConnectTarget {
  /** Node name, for SshError.host. */
  name: string;
  /** Start of every message: "cp-1 (ssh://ubuntu@10.0.0.1:22): " or "...: jump host ssh://...: ". */
  prefix: string;
  endpoint: SshEndpoint;
  credentials: SshCredentials;
  hostKeys: HostKeyPolicy;
  /** What the target is reached through (accept-new memory key). */
  via?: string;
}

export interface ConnectSettings {
  connectTimeoutMs: number;
  keepaliveIntervalMs: number;
  keepaliveCountMax: number;
  retries: number;
  retryDelayMs: number;
  log: (line: string) => void;
  /** Ends the attempt in progress and the retries; the run's interruption does too. */
  signal?: AbortSignal;
}

export interface Connected {
  client: SshClient;
  fingerprint: string;
}

/** Opens the transport for one attempt: a TCP socket by default, or a tunnel stream. */
export type OpenStream = () => Promise<Duplex>;

/** A failed attempt: the error to report and whether another attempt may succeed. */
interface AttemptFailure {
  error: SshError;
  retryable: boolean;
}

// Network errors a booting or briefly unreachable machine gives (the VM is starting sshd,
// the route comes up, the firewall is not yet open).
const TRANSIENT_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ENETDOWN",
  "EPIPE",
  "EAI_AGAIN",
]);

const REASONS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ETIMEDOUT: "connection timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ENOTFOUND: "unknown host name",
  EAI_AGAIN: "host name lookup failed temporarily",
};

function authMethods(c: SshCredentials): AuthenticationType[] {
  // The configured key before agent keys: an agent holding many keys can use up the server's
  // MaxAuthTries before the right one is offered (k0sctl#674).
  const methods: AuthenticationType[] = [];
  if (c.privateKey !== undefined) methods.push("publickey");
  if (c.agent) methods.push("agent");
  if (c.password !== undefined) methods.push("password");
  return methods;
}

const METHOD_NAMES: Record<string, string> = {
  publickey: "private key",
  agent: "agent keys",
  password: "password",
};

/**
 * Reads the key once, before any connection is made: a key that cannot be used fails at once
 * (never retried), and an encrypted key is decrypted once for every attempt (bcrypt-pbkdf is slow).
 */
function readPrivateKey(target: ConnectTarget, { utils }: Ssh2): ParsedKey | undefined {
  const { privateKey, passphrase } = target.credentials;
  if (privateKey === undefined) return undefined;
  const usable = ssh2Key(privateKey, passphrase);
  if ("problem" in usable) {
    throw new SshError(
      target.name,
      "authentication",
      `${target.prefix}cannot use the private key: ${usable.problem}`,
    );
  }
  const parsed = utils.parseKey(usable.key, usable.passphrase);
  if (parsed instanceof Error) {
    // ssh2 says what is wrong (encrypted without passphrase, bad passphrase, malformed), but
    // some of its messages end with bytes decoded from the key ("Unsupported OpenSSH key magic:
    // <bytes>", "... private key type: <bytes>"): of a corrupted key, those can be key material.
    // Only the words before the colon are kept, and ssh2's error is not kept as the cause.
    const said = parsed.message.split(":")[0]!.trim();
    throw new SshError(
      target.name,
      "authentication",
      `${target.prefix}cannot use the private key: ${said}`,
    );
  }
  // OpenSSH's key format may hold several keys; like ssh2 itself, use the first.
  const first = (Array.isArray(parsed) ? (parsed as ParsedKey[])[0] : parsed) as ParsedKey;
  if (!first.isPrivateKey()) {
    throw new SshError(
      target.name,
      "authentication",
      `${target.prefix}the private key given is a public key`,
    );
  }
  return first;
}

/** The error of a connection given up because the caller cancelled it or the run was interrupted. */
function cancelledConnect(target: ConnectTarget, signal: AbortSignal): SshError {
  return new SshError(target.name, "cancelled", `${target.prefix}cancelled while connecting`, {
    cause: abortReason(signal),
  });
}

/**
 * Connects, retrying transient network failures with exponential back-off. A cancel (the
 * caller's signal, or the run interrupted) ends the attempt in progress and the retries at once.
 */
export async function connect(
  target: ConnectTarget,
  settings: ConnectSettings,
  openStream?: OpenStream,
): Promise<Connected> {
  if (authMethods(target.credentials).length === 0) {
    throw new SshError(
      target.name,
      "authentication",
      `${target.prefix}no credentials: give a private key, a password or an SSH agent`,
    );
  }
  const ssh2 = await loadSsh2();
  const key = readPrivateKey(target, ssh2);
  let checker: HostKeyChecker;
  try {
    checker = new HostKeyChecker(target.hostKeys, {
      host: target.endpoint.host,
      port: target.endpoint.port,
      ...(target.via ? { via: target.via } : {}),
    });
  } catch (e) {
    throw new SshError(target.name, "host-key", `${target.prefix}${(e as Error).message}`, {
      cause: e,
    });
  }
  const attempts = 1 + Math.max(0, settings.retries);
  const signal = cancellable(settings.signal);
  for (let attempt = 1; ; attempt++) {
    if (signal.aborted) throw cancelledConnect(target, signal);
    const result = await attemptOnce(ssh2, target, settings, checker, key, openStream, signal);
    if (!("error" in result)) return result;
    const { error, retryable } = result;
    if (signal.aborted) throw cancelledConnect(target, signal);
    if (!retryable || attempt >= attempts) {
      if (attempt > 1) error.message = `${error.message} (after ${attempt} attempts)`;
      throw error;
    }
    const wait = Math.min(10_000, settings.retryDelayMs * 2 ** (attempt - 1));
    settings.log(
      `${error.message}; retrying in ${wait} ms (attempt ${attempt + 1} of ${attempts})`,
    );
    await pause(wait, signal).catch(() => Promise.reject(cancelledConnect(target, signal)));
  }
}

function attemptOnce(
  { Client }: Ssh2,
  target: ConnectTarget,
  settings: ConnectSettings,
  checker: HostKeyChecker,
  key: ParsedKey | undefined,
  openStream: OpenStream | undefined,
  signal: AbortSignal,
): Promise<Connected | AttemptFailure> {
  const fail = (failure: SshFailure, sentence: string, retryable: boolean, cause?: unknown) => ({
    error: new SshError(target.name, failure, `${target.prefix}${sentence}`, { cause }),
    retryable,
  });
  return new Promise((resolve) => {
    const client = new Client();
    let settled = false;
    let hostKeyRefusal: string | undefined;
    let authStarted = false;
    let agentProblem: string | undefined;
    let fingerprint = "";
    let stream: Duplex | undefined;
    let streamTimer: NodeJS.Timeout | undefined = undefined;
    const onAbort = () => settle({ error: cancelledConnect(target, signal), retryable: false });
    const settle = (r: Connected | AttemptFailure) => {
      if (settled) return;
      settled = true;
      clearTimeout(streamTimer);
      signal.removeEventListener("abort", onAbort);
      client.removeListener("ready", onReady);
      client.removeListener("close", onClose);
      if ("error" in r) {
        client.destroy();
        stream?.destroy();
      }
      resolve(r);
    };
    const onReady = () => settle({ client, fingerprint });
    const onClose = () =>
      settle(fail("unreachable", "the connection closed during the SSH handshake", true));
    client.on("ready", onReady);
    client.on("close", onClose);
    signal.addEventListener("abort", onAbort, { once: true });
    // A permanent listener: an 'error' without one would crash the process.
    client.on("error", (err: Error & { level?: string; code?: string }) => {
      if (settled) return;
      if (err.level === "agent") {
        // ssh2 goes on with the next method; keep the reason for a final failure.
        agentProblem = err.message;
        return;
      }
      if (hostKeyRefusal) return settle(fail("host-key", hostKeyRefusal, false, err));
      settle(classify(err, target, settings, authStarted, agentProblem));
    });

    const config: ConnectConfig = {
      host: target.endpoint.host,
      port: target.endpoint.port,
      username: target.endpoint.user,
      readyTimeout: settings.connectTimeoutMs,
      keepaliveInterval: settings.keepaliveIntervalMs,
      keepaliveCountMax: settings.keepaliveCountMax,
      hostVerifier: (key: Buffer) => {
        fingerprint = fingerprintOf(key);
        const decision = checker.check(key);
        if (decision.ok) {
          if (decision.how === "accepted-new") {
            // Named like the errors, so that the accepted key can be told apart per host.
            settings.log(`${target.prefix}accepted new host key ${fingerprint} for this run only`);
          }
          return true;
        }
        hostKeyRefusal = decision.reason;
        return false;
      },
      authHandler: authHandler(target, key, () => (authStarted = true)),
    };
    const known = checker.knownKeyAlgorithms();
    if (known.length > 0) {
      const algos = known as ServerHostKeyAlgorithm[];
      // ssh2 applies these in order: out of the default list, then back in at its head.
      config.algorithms = { serverHostKey: { remove: algos, prepend: algos, append: [] } };
    }

    const start = (tunnel?: Duplex) => {
      if (settled) {
        tunnel?.destroy();
        return;
      }
      try {
        // The TCP connection is made here rather than by ssh2, so that its writes are batched. A
        // tunnel's packets leave through the jump connection's socket, batched already.
        const sock = tunnel ?? batchedConnection(target.endpoint);
        stream = sock;
        config.sock = sock;
        client.connect(config);
        cipherKeysAsObjects(client);
        // Nagle's algorithm off: with it, each command's small packets waited for the server's
        // delayed ACKs, ~90 ms per command on a fast link instead of a few. Through a jump host,
        // the jump connection's own socket carries the packets (it gets the same setting).
        client.setNoDelay(true);
      } catch (e) {
        settle(
          fail("authentication", `cannot start the connection: ${(e as Error).message}`, false, e),
        );
      }
    };
    if (!openStream) return start();
    streamTimer = setTimeout(
      () => settle(fail("timeout", `no tunnel within ${settings.connectTimeoutMs} ms`, true)),
      settings.connectTimeoutMs,
    );
    openStream().then(start, (e: unknown) => {
      const err = e as Error & { reason?: number };
      // RFC 4254 5.1: reason 2 = SSH_OPEN_CONNECT_FAILED (the jump host could not reach it).
      settle(fail("unreachable", `the jump host cannot reach it: ${err.message}`, true, err));
    });
  });
}

function batchedConnection(endpoint: SshEndpoint): Duplex {
  const sock = createConnection({ host: endpoint.host, port: endpoint.port });
  batchWritesPerTick(sock);
  return sock;
}

// Credentials reach ssh2 only through this handler, in kubeforge's order.
function authHandler(target: ConnectTarget, key: ParsedKey | undefined, started: () => void) {
  const { user } = target.endpoint;
  const { agent, password } = target.credentials;
  const methods: AnyAuthMethod[] = [];
  if (key) methods.push({ type: "publickey", username: user, key });
  if (agent) methods.push({ type: "agent", username: user, agent });
  if (password !== undefined) methods.push({ type: "password", username: user, password });
  let next = 0;
  return (methodsLeft: AuthenticationType[] | null): AnyAuthMethod | false => {
    started();
    while (next < methods.length) {
      const m = methods[next++]!;
      const wire = m.type === "agent" ? "publickey" : m.type;
      if (methodsLeft === null || methodsLeft.includes(wire)) return m;
    }
    return false;
  };
}

function classify(
  err: Error & { level?: string; code?: string },
  target: ConnectTarget,
  settings: ConnectSettings,
  authStarted: boolean,
  agentProblem: string | undefined,
): AttemptFailure {
  const mk = (failure: SshFailure, sentence: string, retryable: boolean): AttemptFailure => ({
    error: new SshError(target.name, failure, `${target.prefix}${sentence}`, { cause: err }),
    retryable,
  });
  // sshd disconnects ("Too many authentication failures", MaxAuthTries) instead of answering
  // a failed method: after authentication began, any protocol error is an authentication one.
  const disconnected = err.level === "protocol" || typeof err.code === "number";
  if (err.level === "client-authentication" || (authStarted && disconnected)) {
    const tried = authMethods(target.credentials).map((m) =>
      m === "agent" && agentProblem
        ? `agent keys (the agent failed: ${agentProblem})`
        : METHOD_NAMES[m],
    );
    return mk(
      "authentication",
      `authentication failed for user "${target.endpoint.user}" (tried ${tried.join(", ")})`,
      false,
    );
  }
  if (err.level === "client-timeout") {
    return mk("timeout", `no SSH handshake within ${settings.connectTimeoutMs} ms`, true);
  }
  const code = typeof err.code === "string" ? err.code : undefined;
  if (code) {
    const reason = `${REASONS[code] ?? err.message} (${code})`;
    return mk("unreachable", `cannot connect: ${reason}`, TRANSIENT_CODES.has(code));
  }
  if (/connection lost before handshake/i.test(err.message)) {
    return mk("unreachable", `cannot connect: ${err.message.toLowerCase()}`, true);
  }
  return mk("unreachable", `cannot connect: ${err.message}`, false);
}
