export * from './bearer-token.guard';
export * from './clock';
export * from './daemon-http';
export * from './daemon-lifecycle';
export * from './daemon-logger';
export * from './json-error.filter';
export * from './validation.pipe';
export * from './environment';
