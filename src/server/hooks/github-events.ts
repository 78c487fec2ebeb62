/**
 * The `X-GitHub-Event` names GitHub documents (docs.github.com, "Webhook events and
 * payloads"). A GitHub receiver answers any other name 200 `ignored` and stores nothing
 * (receive.ts): a typo or a made-up event must not route like a real one, and GitHub must not
 * retry it.
 *
 * Source: the keys of `EventPayloadMap` in @octokit/webhooks-types 7.6.1 (generated from
 * GitHub's webhook schemas; installed with @octokit/webhooks-examples), plus the events GitHub
 * documented after that release (as listed by @octokit/webhooks 13.x-14.x, generated from
 * github/rest-api-description): issue_dependencies, personal_access_token_request, projects_v2,
 * projects_v2_status_update, repository_advisory, repository_ruleset, secret_scanning_scan,
 * security_and_analysis, sub_issues. intake-faults.test.ts checks at compile time that every
 * @octokit/webhooks-types name is here. A name GitHub adds later is ignored until it is added.
 */
export const GITHUB_EVENT_NAMES = [
  'branch_protection_configuration',
  'branch_protection_rule',
  'check_run',
  'check_suite',
  'code_scanning_alert',
  'commit_comment',
  'create',
  'custom_property',
  'custom_property_values',
  'delete',
  'dependabot_alert',
  'deploy_key',
  'deployment',
  'deployment_protection_rule',
  'deployment_review',
  'deployment_status',
  'discussion',
  'discussion_comment',
  'fork',
  'github_app_authorization',
  'gollum',
  'installation',
  'installation_repositories',
  'installation_target',
  'issue_comment',
  'issue_dependencies',
  'issues',
  'label',
  'marketplace_purchase',
  'member',
  'membership',
  'merge_group',
  'meta',
  'milestone',
  'org_block',
  'organization',
  'package',
  'page_build',
  'personal_access_token_request',
  'ping',
  'project',
  'project_card',
  'project_column',
  'projects_v2',
  'projects_v2_item',
  'projects_v2_status_update',
  'public',
  'pull_request',
  'pull_request_review',
  'pull_request_review_comment',
  'pull_request_review_thread',
  'push',
  'registry_package',
  'release',
  'repository',
  'repository_advisory',
  'repository_dispatch',
  'repository_import',
  'repository_ruleset',
  'repository_vulnerability_alert',
  'secret_scanning_alert',
  'secret_scanning_alert_location',
  'secret_scanning_scan',
  'security_advisory',
  'security_and_analysis',
  'sponsorship',
  'star',
  'status',
  'sub_issues',
  'team',
  'team_add',
  'watch',
  'workflow_dispatch',
  'workflow_job',
  'workflow_run',
] as const;

/** One documented GitHub webhook event name. */
export type GithubEventName = (typeof GITHUB_EVENT_NAMES)[number];

/** {@link GITHUB_EVENT_NAMES} for lookups (exact, case-sensitive: GitHub sends them lower-case). */
export const GITHUB_EVENTS: ReadonlySet<string> = new Set(GITHUB_EVENT_NAMES);
