// Where a step reports progress: phases get one from the Runner (workflow/), the pure builders'
// checks and the node stores take one as a parameter.

export interface Logger {
  /** A progress line on stderr, prefixed with the phase ("[certs] ..."). */
  info(message: string): void;
  /** A warning kubeadm would print as "[WARNING ...]" or "W..." — the run goes on. */
  warn(message: string): void;
}
