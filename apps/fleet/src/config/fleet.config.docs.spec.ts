import { describeVariableDocs } from '../../../../test/support/environment-docs';
import { FleetConfig } from './fleet.config';

describeVariableDocs(FleetConfig, {
  daemon: 'controller',
  page: 'docs/reference.md',
  heading: '## Controller settings',
  envExample: 'vm-fleet.env.example',
});
