// Temporal connections: the settings (one loader, envconfig first), reachability, and connecting.
export * from './connect';
export * from './reach';
export * from './settings';
export * from './tls-probe';
