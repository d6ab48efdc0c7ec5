/**
 * The ids and addresses every example in the OpenAPI documents uses. None can be a real fleet's:
 * a heartbeat sent from Swagger UI's "Try it out" enrolls a node no fleet has, at an address
 * of the documentation range (RFC 5737) that reaches no agent, and a delete tried out there
 * names a VM in the real format (vm- and 16 hex digits) that no agent will have made.
 */
export const EXAMPLE_NODE_ID = 'example-node-01';
export const EXAMPLE_WG_IP = '192.0.2.10';
export const EXAMPLE_VM_ID = 'vm-0123456789abcdef';
export const EXAMPLE_TENANT_ID = 'example-tenant';
