/**
 * The one price table of rcb's AWS infrastructure: us-east-1 list prices, without the free
 * tier, as taken on `INFRA_PRICES.asOf` from each service's pricing page. Every infrastructure
 * figure rcb prints (rcb estimate, rcb sweep plan, rcb cloud doctor, reports) is computed from
 * this table; nothing else holds a price. Other regions differ by a few percent.
 */
export const INFRA_PRICES = {
  asOf: '2026-11-30',
  region: 'us-east-1',
  fargate: {
    source: 'https://aws.amazon.com/fargate/pricing/',
    /** Per vCPU-hour and per GB-hour, billed per second with a one-minute minimum. */
    onDemand: { X86_64: { vcpuHour: 0.04048, gbHour: 0.004445 }, ARM64: { vcpuHour: 0.03238, gbHour: 0.00356 } },
    /** Spot prices move with demand; these are the usual ~70% discount of us-east-1. */
    spot: { X86_64: { vcpuHour: 0.012144, gbHour: 0.0013335 }, ARM64: { vcpuHour: 0.009714, gbHour: 0.001068 } },
    minimumBilledSec: 60,
  },
  lambda: {
    source: 'https://aws.amazon.com/lambda/pricing/',
    /** arm64, per GB-second of duration. */
    arm64GbSecond: 0.0000133334,
    perMillionRequests: 0.2,
  },
  stepFunctions: { source: 'https://aws.amazon.com/step-functions/pricing/', perThousandTransitions: 0.025 },
  dynamodb: {
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    perMillionWriteUnits: 0.625,
    perMillionReadUnits: 0.125,
    storageGbMonth: 0.25,
    pitrGbMonth: 0.2,
  },
  s3: { source: 'https://aws.amazon.com/s3/pricing/', perThousandPuts: 0.005, perThousandGets: 0.0004, storageGbMonth: 0.023 },
  logs: { source: 'https://aws.amazon.com/cloudwatch/pricing/', ingestGb: 0.5, storageGbMonth: 0.03 },
  cloudwatch: { source: 'https://aws.amazon.com/cloudwatch/pricing/', alarmMonth: 0.1, dashboardMonth: 3.0 },
  xray: { source: 'https://aws.amazon.com/xray/pricing/', perMillionTraces: 5.0 },
  sqs: { source: 'https://aws.amazon.com/sqs/pricing/', perMillionRequests: 0.4 },
  vpcEndpoints: { source: 'https://aws.amazon.com/privatelink/pricing/', interfaceEndpointAzHour: 0.01, processedGb: 0.01 },
  secretsManager: { source: 'https://aws.amazon.com/secrets-manager/pricing/', secretMonth: 0.4, perTenThousandCalls: 0.05 },
  kms: { source: 'https://aws.amazon.com/kms/pricing/', keyMonth: 1.0 },
  ecr: { source: 'https://aws.amazon.com/ecr/pricing/', storageGbMonth: 0.1 },
} as const;

/** Hours in the month the idle cost is quoted for (AWS's own convention). */
export const HOURS_PER_MONTH = 730;
