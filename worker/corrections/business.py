"""Named kinds of things in agent and business notes (devops, billing, support, sales): the
environments, databases, CI systems, ticket and chat tools, frameworks and vendors a team works
with.

Pure data, merged into `correction_entities.OPEN_CLASSES`. A team runs several of each at once
(Postgres and Redis, staging and production), so two members of one kind compete only where
the note says the slot holds one value: a correction marker ("switched to GitLab CI") or a
one-value slot ("The CI system is Jenkins"). Words with an everyday reading ("team", "free",
"plus", "express", "linear") are left out.
"""

from __future__ import annotations

# Deployment environments name the thing a fact is about, not a value of it: "Staging runs
# Postgres 16" and "Production runs Postgres 14" both hold. `corrections` reads a changed
# environment beside another changed value as another subject.
ENVIRONMENTS = "production staging sandbox preprod uat"

OPEN_CLASSES = {
    "database": "postgres postgresql mysql mariadb mongodb redis dynamodb cassandra sqlite "
                "snowflake bigquery redshift clickhouse elasticsearch opensearch supabase",
    "ci_system": "jenkins circleci github-actions gitlab-ci travis buildkite teamcity "
                 "bitbucket-pipelines",
    "ticketing": "jira zendesk freshdesk servicenow youtrack shortcut clubhouse intercom "
                 "helpscout",
    "chat_tool": "slack discord mattermost google-chat webex",
    "frontend_framework": "react vue angular svelte nextjs nuxt ember solidjs",
    "backend_framework": "django flask fastapi rails laravel spring-boot nestjs phoenix",
    "observability": "datadog sentry grafana prometheus new-relic splunk honeycomb pagerduty "
                     "opsgenie",
    "crm": "salesforce hubspot pipedrive zoho",
    "payment_processor": "stripe adyen braintree paddle chargebee recurly",
    "code_host": "github gitlab bitbucket",
    "iac": "terraform pulumi cloudformation ansible",
    "orchestrator": "kubernetes nomad ecs",
    "region": "us-east-1 us-east-2 us-west-1 us-west-2 eu-west-1 eu-west-2 eu-central-1 "
              "ap-southeast-1 ap-southeast-2 ap-northeast-1",
}

# Multi-word product names joined into one token before tokenizing (lower-cased patterns).
NAMES: tuple[tuple[str, str], ...] = (
    (r"\bgithub actions\b", " github-actions "),
    (r"\bgitlab ci(?:/cd)?\b", " gitlab-ci "),
    (r"\bbitbucket pipelines\b", " bitbucket-pipelines "),
    (r"\bgoogle chat\b", " google-chat "),
    (r"\bnew relic\b", " new-relic "),
    (r"\bspring boot\b", " spring-boot "),
    (r"\bnext\.?js\b", " nextjs "),
    (r"\bpre-?production\b", " preprod "),
    (r"\bhelp ?scout\b", " helpscout "),
)
