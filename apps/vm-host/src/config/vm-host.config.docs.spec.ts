import { describeVariableDocs } from '../../../../test/support/environment-docs';
import { VmHostConfig } from './vm-host.config';

describeVariableDocs(VmHostConfig, {
  daemon: 'agent',
  readmeHeading: '## Enroll a node',
  envExample: 'vm-host.env.example',
});
