// Options of an SSH connection to one host (the issue 5 contracts). Secrets (keys, passphrases,
// passwords) live only in these objects: they never reach argv, a log line or an error message.

export interface SshEndpoint {
  host: string;
  port: number;
  user: string;
}

export interface SshCredentials {
  /** PEM/OpenSSH private key content (never a path here). */
  privateKey?: string | Buffer;
  passphrase?: string;
  password?: string;
  /** SSH agent socket path (SSH_AUTH_SOCK). */
  agent?: string;
}

export interface HostKeyPolicy {
  /** "SHA256:<base64 without padding>" pins, as `ssh-keygen -lf` and `ssh-keyscan | ssh-keygen -lf -` print. */
  fingerprints?: string[];
  /** known_hosts lines ("host keytype base64"); hashed names (`|1|salt|hash`) and `[host]:port` allowed. */
  knownHosts?: string[];
  /** Accept any key on first use for THIS run (remembered in-process only, never written anywhere). */
  acceptNew?: boolean;
}

export interface SshJump {
  endpoint: SshEndpoint;
  credentials: SshCredentials;
  hostKeys: HostKeyPolicy;
}

export interface SshHostOptions {
  /** Log prefix / node name. */
  name: string;
  endpoint: SshEndpoint;
  credentials: SshCredentials;
  hostKeys: HostKeyPolicy;
  jump?: SshJump;
  /** Used as `sudo -S -k -p ''` with the password written to stdin once. */
  sudoPassword?: string;
  /** Default 15000. */
  connectTimeoutMs?: number;
  /** Default 10000. */
  keepaliveIntervalMs?: number;
  /** Unanswered keep-alives before the peer counts as dead. Default 3. */
  keepaliveCountMax?: number;
  /** Transient network errors only; default 3, exponential back-off. */
  retries?: number;
  /** First back-off delay (doubled each retry, at most 10 s). Default 1000. */
  retryDelayMs?: number;
  /** Concurrent session channels per connection; default 8 (below OpenSSH's MaxSessions 10). */
  maxSessions?: number;
  log?: (line: string) => void;
  /** Cancels the connection attempt and its retries (the run's interruption does too). */
  signal?: AbortSignal;
}
