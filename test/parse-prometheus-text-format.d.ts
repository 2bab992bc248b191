declare module 'parse-prometheus-text-format' {
  interface MetricFamily {
    name: string
    help: string
    type: string
    metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string }[]
  }
  export default function parse(text: string): MetricFamily[]
}
