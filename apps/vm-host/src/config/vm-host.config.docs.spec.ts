import { describeVariableDocs } from '../../../../test/support/environment-docs';
import { VmHostConfig } from './vm-host.config';

describeVariableDocs(VmHostConfig, {
  daemon: 'agent',
  page: 'docs/reference.md',
  heading: '## Agent settings',
  envExample: 'vm-host.env.example',
});
