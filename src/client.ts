// The typed client library other services import; the code is in src/client/.
export * from './client/index';
