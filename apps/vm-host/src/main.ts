#!/usr/bin/env node
// The node agent arrives with its own issue.
console.error('service-vm-host: not built yet');
process.exit(1);
