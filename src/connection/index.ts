// Temporal connections: the settings (one loader, envconfig first), reachability, and connecting.
export * from './connect';
export * from './reach';
export * from './service-token';
export * from './settings';
export * from './tls-probe';
