import ArgumentParser
struct Record: AsyncParsableCommand {}
